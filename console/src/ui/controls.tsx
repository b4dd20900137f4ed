// Small controls every screen uses: labelled fields, a copy button, a live countdown, badges, times, links.
import type { ComponentChildren } from "preact";
import { useEffect, useId, useState } from "preact/hooks";
import { href, navigate } from "../router";

export function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: ComponentChildren;
  children: (id: string, describedBy: string | undefined) => ComponentChildren;
}) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children(id, hintId)}
      {hint && (
        <p class="hint" id={hintId}>
          {hint}
        </p>
      )}
    </div>
  );
}

export function Link({
  to,
  children,
  current,
  label,
}: {
  to: string;
  children: ComponentChildren;
  current?: boolean;
  label?: string;
}) {
  return (
    <a
      href={href(to)}
      aria-current={current ? "page" : undefined}
      aria-label={label}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}

/** A button that copies `text`: for a token shown once, a snippet, a command. */
export function Copy({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState<"copied" | "failed" | null>(null);
  return (
    <span class="copy">
      <button
        type="button"
        onClick={() => {
          navigator.clipboard
            .writeText(text)
            .then(() => setDone("copied"))
            .catch(() => setDone("failed"));
        }}
      >
        {label}
      </button>
      <span class="copy-said" role="status">
        {done === "copied" ? "Copied." : done === "failed" ? "The browser did not allow copying; select the text instead." : ""}
      </span>
    </span>
  );
}

/** The seconds left until `deadline` (ISO), counting down every second. */
export function Countdown({ deadline, onOver }: { deadline: string; onOver?: () => void }) {
  const end = Date.parse(deadline);
  const [left, setLeft] = useState(() => Math.max(0, Math.ceil((end - Date.now()) / 1000)));
  useEffect(() => {
    const timer = window.setInterval(() => {
      const seconds = Math.max(0, Math.ceil((end - Date.now()) / 1000));
      setLeft(seconds);
      if (seconds === 0) {
        window.clearInterval(timer);
        onOver?.();
      }
    }, 1000);
    return () => window.clearInterval(timer);
  }, [end]);
  return (
    <span role="timer" class={left <= 30 ? "countdown soon" : "countdown"} aria-label={`${left} seconds left`}>
      {left} s left
    </span>
  );
}

export type Tone = "ok" | "warn" | "bad" | "info" | "plain";

export function Badge({ tone = "plain", children }: { tone?: Tone; children: ComponentChildren }) {
  return <span class={`badge ${tone}`}>{children}</span>;
}

/** An ISO time as the person's local time, the exact value on hover. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return <span>{iso}</span>;
  return (
    <time dateTime={iso} title={iso}>
      {date.toLocaleString()}
    </time>
  );
}

export function Code({ children }: { children: ComponentChildren }) {
  return <pre class="code">{children}</pre>;
}

/** A block of text with its copy button: a snippet, a command, a token shown once. */
export function Snippet({ text, label }: { text: string; label: string }) {
  return (
    <div class="snippet">
      <pre class="code" aria-label={label}>
        {text}
      </pre>
      <Copy text={text} label={`Copy ${label}`} />
    </div>
  );
}

/** A labelled choice among `options` (each shown as it is), with `none` as a first choice meaning "nothing chosen"
 * (the empty value) when given. */
export function Choice({
  label,
  value,
  options,
  onChange,
  none,
  hint,
}: {
  label: string;
  value: string;
  options: readonly string[];
  onChange: (value: string) => void;
  none?: string;
  hint?: string;
}) {
  return (
    <Field label={label} hint={hint}>
      {(id, described) => (
        <select id={id} aria-describedby={described} value={value} onChange={(event) => onChange(event.currentTarget.value)}>
          {none !== undefined && <option value="">{none}</option>}
          {options.map((option) => (
            <option key={option} value={option}>
              {option}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}
