// What an answer said, shown as it was said: the envelope's message (and its warnings), or the refusal's.
import type { ComponentChildren } from "preact";
import type { Outcome } from "../resource";

export function Notice({ outcome, onClose }: { outcome: Outcome | null; onClose?: () => void }) {
  if (outcome === null) return null;
  return (
    <div class={outcome.ok ? "notice ok" : "notice refused"} role={outcome.ok ? "status" : "alert"}>
      <p>{outcome.message}</p>
      {outcome.warnings.length > 0 && (
        <ul class="warnings">
          {outcome.warnings.map((warning) => (
            <li key={warning}>{warning}</li>
          ))}
        </ul>
      )}
      {onClose && (
        <button type="button" class="quiet close" onClick={onClose} aria-label="Dismiss this message">
          ×
        </button>
      )}
    </div>
  );
}

/** A read that failed: its message, and a way to read again. */
export function LoadError({ error, retry }: { error: string | null; retry: () => void }) {
  if (error === null) return null;
  return (
    <div class="notice refused" role="alert">
      <p>{error}</p>
      <button type="button" onClick={retry}>
        Read again
      </button>
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}
