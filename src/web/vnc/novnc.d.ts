/** The part of noVNC's RFB class the viewer uses (docs/API.md of @novnc/novnc; the package ships no types). */
declare module '@novnc/novnc' {
  export default class RFB extends EventTarget {
    constructor(target: HTMLElement, urlOrChannel: string | WebSocket, options?: { shared?: boolean; credentials?: { username?: string; password?: string; target?: string }; wsProtocols?: string[] })
    scaleViewport: boolean
    viewOnly: boolean
    background: string
    focus(): void
    disconnect(): void
    sendCtrlAltDel(): void
    addEventListener(type: 'connect', listener: (event: CustomEvent) => void): void
    addEventListener(type: 'disconnect', listener: (event: CustomEvent<{ clean: boolean }>) => void): void
    addEventListener(type: 'securityfailure', listener: (event: CustomEvent<{ status: number; reason?: string }>) => void): void
    addEventListener(type: 'desktopname', listener: (event: CustomEvent<{ name: string }>) => void): void
  }
}
