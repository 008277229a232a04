/** The URL without its password, for messages (errors, the CLI's labels). */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')
  }
}
