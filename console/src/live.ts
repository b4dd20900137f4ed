// The live feed: one EventSource on /api/v1/events for the whole console. A topic's event means "this moved": a
// screen that shows it reads its REST routes again. After the stream breaks (a gateway restart) the browser opens
// it again, and every screen reads again, since what happened meanwhile was not told.
import { useEffect, useRef, useState } from "preact/hooks";

export type Topic =
  | "approvals"
  | "audit"
  | "tools"
  | "servers"
  | "knowledge"
  | "shipyard"
  | "chat"
  | "token"
  | "clients";

export const TOPICS: readonly Topic[] = [
  "approvals",
  "audit",
  "tools",
  "servers",
  "knowledge",
  "shipyard",
  "chat",
  "token",
  "clients",
];

export type Connection = "connecting" | "live" | "reconnecting" | "stopped";
type Listener = (data: Record<string, unknown>) => void;

class Feed {
  private source: EventSource | null = null;
  private listeners = new Map<Topic, Set<Listener>>();
  private connectionListeners = new Set<(state: Connection) => void>();
  private opened = 0;
  private retry: number | undefined;
  state: Connection = "stopped";

  start(): void {
    if (this.source !== null) return;
    this.setState(this.opened === 0 ? "connecting" : "reconnecting");
    const source = new EventSource("/api/v1/events");
    this.source = source;
    source.addEventListener("hello", () => {
      this.opened += 1;
      this.setState("live");
      // Anything may have moved while the stream was down: every screen reads again.
      if (this.opened > 1) this.everything();
    });
    source.addEventListener("resync", () => this.everything());
    for (const topic of TOPICS) {
      source.addEventListener(topic, (event) => this.emit(topic, (event as MessageEvent<string>).data));
    }
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        // Refused (the session ended) or the gateway is away for longer: open it again a little later.
        this.source = null;
        this.setState("reconnecting");
        this.retry = window.setTimeout(() => this.start(), 3000);
      } else {
        this.setState("reconnecting");
      }
    };
  }

  stop(): void {
    window.clearTimeout(this.retry);
    this.source?.close();
    this.source = null;
    this.opened = 0;
    this.setState("stopped");
  }

  on(topic: Topic, listener: Listener): () => void {
    let set = this.listeners.get(topic);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(topic, set);
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  onConnection(listener: (state: Connection) => void): () => void {
    this.connectionListeners.add(listener);
    return () => this.connectionListeners.delete(listener);
  }

  private emit(topic: Topic, raw: string): void {
    let data: Record<string, unknown> = {};
    try {
      data = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      data = {};
    }
    for (const listener of this.listeners.get(topic) ?? []) listener(data);
  }

  private everything(): void {
    for (const topic of TOPICS) this.emit(topic, "{}");
  }

  private setState(state: Connection): void {
    this.state = state;
    for (const listener of this.connectionListeners) listener(state);
  }
}

export const feed = new Feed();

/** Call `onChange` whenever one of `topics` moves (and after the feed reconnects), for as long as the component
 * is shown. */
export function useLive(topics: readonly Topic[], onChange: (data: Record<string, unknown>) => void): void {
  const latest = useRef(onChange);
  latest.current = onChange;
  const key = topics.join(",");
  useEffect(() => {
    const offs = topics.map((topic) => feed.on(topic, (data) => latest.current(data)));
    return () => {
      for (const off of offs) off();
    };
  }, [key]);
}

export function useConnection(): Connection {
  const [state, setState] = useState<Connection>(feed.state);
  useEffect(() => {
    const off = feed.onConnection(setState);
    setState(feed.state); // what changed between the first render and this subscription
    return off;
  }, []);
  return state;
}
