// Adding a document: a file from this computer (sent with the request), a public URL, text, or a path inside an
// ingest root; its progress shown as the service reports it.
import { useState } from "preact/hooks";
import { callWithProgress, messageOf, type Progress } from "../../api";
import type { Outcome } from "../../resource";
import { Field } from "../../ui/controls";
import { Notice } from "../../ui/notice";

type Source = "upload" | "url" | "text" | "path";
const SOURCES: { value: Source; label: string }[] = [
  { value: "upload", label: "A file" },
  { value: "url", label: "A URL" },
  { value: "text", label: "Text" },
  { value: "path", label: "A path on the server" },
];
// A larger file goes by path: it travels in one message to the knowledge service.
const MAX_UPLOAD = 3 * 1024 * 1024;

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let index = 0; index < bytes.length; index += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(index, index + 0x8000));
  }
  return btoa(binary);
}

export function Ingest({ roots, onDone }: { roots: string[]; onDone: () => void }) {
  const [source, setSource] = useState<Source>("upload");
  const [file, setFile] = useState<File | null>(null);
  // A file input keeps showing the file chosen until it is made anew: one per ingest, so it never names a file
  // that is no longer the one to send.
  const [picker, setPicker] = useState(0);
  const [value, setValue] = useState("");
  const [name, setName] = useState("");
  const [pending, setPending] = useState(false);
  const [progress, setProgress] = useState<Progress | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);

  async function body(): Promise<Record<string, unknown>> {
    const named = name.trim() ? { name: name.trim() } : {};
    if (source === "upload") {
      if (file === null) throw new Error("Choose a file to ingest.");
      if (file.size > MAX_UPLOAD) {
        throw new Error(
          `${file.name} is ${(file.size / 1048576).toFixed(1)} MiB; a file over 3 MiB goes by path: put it in an ingest root (${roots.join(", ")}) and ingest it by path.`,
        );
      }
      const content = base64(new Uint8Array(await file.arrayBuffer()));
      return { upload: { filename: file.name, contentBase64: content }, ...named };
    }
    return { [source]: value, ...named };
  }

  async function submit(event: Event): Promise<void> {
    event.preventDefault();
    setPending(true);
    setOutcome(null);
    setProgress(null);
    try {
      const answer = await callWithProgress("POST", "/knowledge/documents", await body(), setProgress);
      setOutcome({ ok: answer.ok, message: answer.message, warnings: answer.warnings });
      setValue("");
      setName("");
      setFile(null);
      setPicker((made) => made + 1);
      onDone();
    } catch (failure) {
      setOutcome({ ok: false, message: messageOf(failure), warnings: [] });
    } finally {
      setPending(false);
      setProgress(null);
    }
  }

  return (
    <form onSubmit={submit} aria-labelledby="ingest">
      <h2 id="ingest">Add a document</h2>
      <fieldset>
        <legend>From</legend>
        <div class="actions" role="radiogroup" aria-label="Where the document comes from">
          {SOURCES.map((option) => (
            <label key={option.value} class="choice">
              <input
                type="radio"
                name="ingest-source"
                value={option.value}
                checked={source === option.value}
                onChange={() => setSource(option.value)}
              />{" "}
              {option.label}
            </label>
          ))}
        </div>
        {source === "upload" && (
          <Field label="File" hint="Markdown, text, HTML, JSON or PDF, up to 3 MiB.">
            {(id, hint) => (
              <input
                key={picker}
                id={id}
                type="file"
                aria-describedby={hint}
                accept=".md,.markdown,.txt,.text,.log,.html,.htm,.json,.pdf"
                onChange={(event) => setFile(event.currentTarget.files?.[0] ?? null)}
              />
            )}
          </Field>
        )}
        {source === "url" && (
          <Field label="URL" hint="An http(s) page on a public address.">
            {(id, hint) => (
              <input id={id} type="url" aria-describedby={hint} value={value} onInput={(event) => setValue(event.currentTarget.value)} />
            )}
          </Field>
        )}
        {source === "text" && (
          <Field label="Text" hint="Read as markdown.">
            {(id, hint) => (
              <textarea id={id} aria-describedby={hint} value={value} onInput={(event) => setValue(event.currentTarget.value)} />
            )}
          </Field>
        )}
        {source === "path" && (
          <Field label="Path" hint={`An absolute path inside an ingest root: ${roots.join(", ")}.`}>
            {(id, hint) => (
              <input id={id} aria-describedby={hint} value={value} onInput={(event) => setValue(event.currentTarget.value)} />
            )}
          </Field>
        )}
        <Field label="Name (optional)" hint="Unique; the file's or page's name when empty.">
          {(id, hint) => (
            <input id={id} aria-describedby={hint} value={name} maxLength={200} onInput={(event) => setName(event.currentTarget.value)} />
          )}
        </Field>
        <div class="actions">
          <button type="submit" class="primary" disabled={pending}>
            {pending ? "Ingesting…" : "Ingest"}
          </button>
          {progress && (
            <span role="status" class="progress-line">
              <progress max={Math.max(progress.total, 1)} value={progress.done} aria-label="Ingest progress" />{" "}
              {progress.message}
            </span>
          )}
        </div>
      </fieldset>
      <Notice outcome={outcome} onClose={() => setOutcome(null)} />
    </form>
  );
}
