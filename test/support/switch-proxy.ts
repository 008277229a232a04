/**
 * A TCP proxy on 127.0.0.1 in front of one of several local ports, switched by the test: what a
 * load balancer does when it sends a client's next connection to another instance. `switchTo`
 * routes new connections to another port and cuts the open ones, as a balancer that dropped an
 * instance would; the instance behind a cut connection is left as it is (paused, alive).
 */
import net from 'node:net'

export interface SwitchProxy {
  port: number
  /** New connections go to `port`; the connections open now are destroyed, both sides. */
  switchTo(port: number): void
  close(): Promise<void>
}

export function startSwitchProxy(target: number): Promise<SwitchProxy> {
  let current = target
  const open = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(current, '127.0.0.1')
    for (const socket of [client, upstream]) {
      open.add(socket)
      socket.once('close', () => open.delete(socket))
      // (a cut connection's error is the point of the cut, not a failure of the proxy)
      socket.on('error', () => undefined)
    }
    client.pipe(upstream).pipe(client)
    client.once('close', () => upstream.destroy())
    upstream.once('close', () => client.destroy())
  })
  const cutAll = () => {
    for (const socket of open) socket.destroy()
  }
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as net.AddressInfo).port,
        switchTo(port) {
          current = port
          cutAll()
        },
        close: () => new Promise<void>((done) => (cutAll(), server.close(() => done()))),
      })
    })
  })
}
