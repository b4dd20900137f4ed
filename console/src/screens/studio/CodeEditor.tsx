// The code field: CodeMirror, fetched the first time an editor is shown (the list alone never loads it). The editor
// owns its text once it shows it: `value` is read when it mounts, and only the person's typing changes it after that
// (a keystroke can be ahead of the render that carries the one before it). Text from elsewhere, another tool opened,
// is a new editor: the caller gives it a new key.
import { useEffect, useId, useRef, useState } from "preact/hooks";
import type { Mounted } from "./codemirror";

export function CodeEditor({ value, onChange, hint }: { value: string; onChange: (code: string) => void; hint: string }) {
  const id = useId();
  const host = useRef<HTMLDivElement>(null);
  const mounted = useRef<Mounted | null>(null);
  const latest = useRef(onChange);
  latest.current = onChange;
  const [state, setState] = useState<"loading" | "ready" | "failed">("loading");

  useEffect(() => {
    let gone = false;
    import("./codemirror")
      .then(({ mount }) => {
        if (gone || host.current === null) return;
        mounted.current = mount(host.current, value, "Code", (code) => latest.current(code));
        setState("ready");
      })
      .catch(() => setState("failed"));
    return () => {
      gone = true;
      mounted.current?.destroy();
      mounted.current = null;
    };
  }, []);

  return (
    <div class="field">
      <span class="label" id={`${id}-label`}>
        Code
      </span>
      {state === "loading" && <p class="muted">Loading the code editor…</p>}
      {state === "failed" ? (
        <textarea
          aria-labelledby={`${id}-label`}
          aria-describedby={`${id}-hint`}
          value={value}
          rows={14}
          onInput={(event) => onChange(event.currentTarget.value)}
        />
      ) : (
        <div class="code-editor" ref={host} />
      )}
      <p class="hint" id={`${id}-hint`}>
        {hint}
      </p>
    </div>
  );
}
