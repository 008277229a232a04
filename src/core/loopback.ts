/**
 * Who may talk to turnchart's loopback servers (the viewer, the inspector relay): they listen on
 * 127.0.0.1, but a web page in the user's browser can still reach them, by a DNS name rebound to
 * 127.0.0.1 (then its requests carry that name as `Host`) or, for a WebSocket, from any origin
 * (WebSockets are not bound by the same-origin policy). These checks let only this machine's
 * own addresses through.
 */

const loopbackNames = ['127.0.0.1', 'localhost', '[::1]']

/**
 * True when a request's `Host` header names this server by a loopback address (DNS rebinding
 * sends the attacker's name instead).
 *
 * @example
 * isLoopbackHost(request.headers.host, 8080) // '127.0.0.1:8080' → true, 'evil.example:8080' → false
 */
export function isLoopbackHost(host: string | undefined, port: number): boolean {
  if (!host) return false
  return loopbackNames.some((name) => host.toLowerCase() === `${name}:${port}`)
}

/**
 * True when a WebSocket's `Origin` is absent (a program, not a browser page) or a page served by
 * this same loopback server.
 *
 * @example
 * isLoopbackOrigin(undefined, 8080) // true (Node's ws client sends none)
 * isLoopbackOrigin('https://evil.example', 8080) // false
 */
export function isLoopbackOrigin(origin: string | undefined, port: number): boolean {
  if (origin === undefined) return true
  return loopbackNames.some((name) => origin.toLowerCase() === `http://${name}:${port}`)
}
