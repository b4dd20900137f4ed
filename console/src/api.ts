// The console's one way to the gateway: /api/v1, the same routes as `saip` and any script. Every answer is the
// envelope the AI gets from the same method; a refusal is shown as the envelope's own message, never re-worded.

export interface Envelope<T = unknown> {
  ok: boolean;
  message: string;
  persisted: boolean;
  restartRequired: boolean;
  warnings: string[];
  data: T;
}

/** An answer that is not 2xx: its status and the envelope, whose message says what to do instead. */
export class Refusal extends Error {
  readonly status: number;
  readonly envelope: Envelope<null>;

  constructor(status: number, envelope: Envelope<null>) {
    super(envelope.message);
    this.status = status;
    this.envelope = envelope;
  }
}

const PREFIX = "/api/v1";
const UNREACHABLE =
  "The gateway did not answer (it may be restarting); the console reads again once it is back.";

let csrf: string | null = null;
const signedOutListeners = new Set<() => void>();

/** The session's CSRF proof, kept in memory only: every change sends it back (X-Saip-Csrf). */
export function setCsrf(value: string | null): void {
  csrf = value;
}

/** Called when an answer says the session is gone (it expired, or was signed out elsewhere). */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

function envelopeOf(message: string): Envelope<null> {
  return { ok: false, message, persisted: false, restartRequired: false, warnings: [], data: null };
}

export type Query = Record<string, string | number | boolean | null | undefined>;

/** `path` with the query's set values, encoded. */
export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== null && value !== undefined && value !== "") params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

/** A path segment from a name the person or an AI chose (a slash or a '?' in it stays inside the segment). */
export function segment(name: string): string {
  return encodeURIComponent(name);
}

export async function call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Envelope<T>> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD" && csrf !== null) headers["X-Saip-Csrf"] = csrf;
  let response: Response;
  try {
    response = await fetch(PREFIX + path, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      credentials: "same-origin",
      signal: signal ?? null,
    });
  } catch (error) {
    if (error instanceof DOMException && error.name === "AbortError") throw error;
    throw new Refusal(0, envelopeOf(UNREACHABLE));
  }
  let envelope: Envelope<T>;
  try {
    envelope = (await response.json()) as Envelope<T>;
  } catch {
    throw new Refusal(response.status, envelopeOf(`The gateway answered ${response.status} without an envelope; try again.`));
  }
  if (response.status === 401 && path !== "/session") {
    for (const listener of signedOutListeners) listener();
  }
  if (!response.ok) throw new Refusal(response.status, envelope as unknown as Envelope<null>);
  return envelope;
}

export const get = <T>(path: string, query?: Query, signal?: AbortSignal): Promise<Envelope<T>> =>
  call<T>("GET", withQuery(path, query), undefined, signal);
export const post = <T>(path: string, body: unknown = {}): Promise<Envelope<T>> => call<T>("POST", path, body);
export const put = <T>(path: string, body: unknown = {}): Promise<Envelope<T>> => call<T>("PUT", path, body);
export const del = <T>(path: string, query?: Query): Promise<Envelope<T>> => call<T>("DELETE", withQuery(path, query));

/** What to show of a failure: a refusal's own message, or the error's. */
export function messageOf(error: unknown): string {
  if (error instanceof Refusal) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}

export interface Progress {
  done: number;
  total: number;
  message: string;
}

/** A change whose route streams its progress (NDJSON, Accept: application/x-ndjson): each progress line to
 * `onProgress`, then the last line's envelope, as `call` would have answered it. */
export async function callWithProgress<T>(
  method: string,
  path: string,
  body: unknown,
  onProgress: (progress: Progress) => void,
): Promise<Envelope<T>> {
  const headers: Record<string, string> = { Accept: "application/x-ndjson", "Content-Type": "application/json" };
  if (csrf !== null) headers["X-Saip-Csrf"] = csrf;
  let response: Response;
  try {
    response = await fetch(PREFIX + path, { method, headers, body: JSON.stringify(body), credentials: "same-origin" });
  } catch {
    throw new Refusal(0, envelopeOf(UNREACHABLE));
  }
  if (!response.ok || response.body === null) {
    // Refused before it started (the request's shape, the session): an ordinary envelope.
    const envelope = (await response.json().catch(() => envelopeOf(`The gateway answered ${response.status}.`))) as Envelope<null>;
    if (response.status === 401) for (const listener of signedOutListeners) listener();
    throw new Refusal(response.status, envelope);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += value;
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      const line = JSON.parse(pending.slice(0, newline)) as { progress?: Progress; status?: number; envelope?: Envelope<T> };
      pending = pending.slice(newline + 1);
      if (line.progress) onProgress(line.progress);
      if (line.status !== undefined && line.envelope !== undefined) {
        if (line.status >= 400) throw new Refusal(line.status, line.envelope as unknown as Envelope<null>);
        return line.envelope;
      }
      newline = pending.indexOf("\n");
    }
  }
  throw new Refusal(0, envelopeOf("The answer ended before it said how the change went; read the list again."));
}
