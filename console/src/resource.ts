// Reading a REST route for a screen, and doing a change through one: the state a screen renders, kept current by
// the live feed's topics.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { type Envelope, messageOf } from "./api";
import { type Topic, useLive } from "./live";

export interface Resource<T> {
  /** The last answer read, kept while a new read is under way. */
  envelope: Envelope<T> | null;
  /** The last read's failure (the refusal's own message), cleared by the next answer. */
  error: string | null;
  loading: boolean;
  reload: () => void;
}

/** Read `load` now, again whenever `deps` change or one of `topics` moves; an answer that comes back after a newer
 * read started is dropped. */
export function useResource<T>(
  load: (signal: AbortSignal) => Promise<Envelope<T>>,
  deps: readonly unknown[],
  topics: readonly Topic[] = [],
): Resource<T> {
  const [envelope, setEnvelope] = useState<Envelope<T> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const latest = useRef(load);
  latest.current = load;
  const current = useRef<AbortController | null>(null);

  const reload = useCallback(() => {
    current.current?.abort();
    const controller = new AbortController();
    current.current = controller;
    setLoading(true);
    latest
      .current(controller.signal)
      .then((answer) => {
        if (controller.signal.aborted) return;
        setEnvelope(answer);
        setError(null);
      })
      .catch((failure: unknown) => {
        if (controller.signal.aborted) return;
        setError(messageOf(failure));
      })
      .finally(() => {
        if (!controller.signal.aborted) setLoading(false);
      });
  }, []);

  useEffect(() => {
    reload();
    return () => current.current?.abort();
    // The caller's deps say when to read again; `reload` itself never changes.
  }, deps);
  useLive(topics, reload);
  return { envelope, error, loading, reload };
}

export interface Outcome {
  ok: boolean;
  message: string;
  warnings: string[];
}

export interface Action<A extends unknown[]> {
  run: (...args: A) => Promise<Envelope | null>;
  pending: boolean;
  /** What the last run answered: the envelope's message, or the refusal's. */
  outcome: Outcome | null;
  clear: () => void;
}

/** A change through the REST API: one at a time, its answer kept to show. */
export function useAction<A extends unknown[]>(change: (...args: A) => Promise<Envelope>): Action<A> {
  const [pending, setPending] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const latest = useRef(change);
  latest.current = change;
  const run = useCallback(async (...args: A): Promise<Envelope | null> => {
    setPending(true);
    try {
      const answer = await latest.current(...args);
      setOutcome({ ok: answer.ok, message: answer.message, warnings: answer.warnings });
      return answer;
    } catch (failure) {
      setOutcome({ ok: false, message: messageOf(failure), warnings: [] });
      return null;
    } finally {
      setPending(false);
    }
  }, []);
  return { run, pending, outcome, clear: () => setOutcome(null) };
}
