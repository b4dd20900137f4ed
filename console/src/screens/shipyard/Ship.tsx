// Shipping a server: what it carries (the tools that can ship, and why the others cannot yet), validated before
// it is shipped as a new bundle version.
import { useState } from "preact/hooks";
import { post } from "../../api";
import { useAction } from "../../resource";
import { Badge, Field } from "../../ui/controls";
import { Notice } from "../../ui/notice";
import type { Report, Shippable } from "./types";

export function Ship({ shippable }: { shippable: Shippable[] }) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [transport, setTransport] = useState("streamable-http");
  const [tools, setTools] = useState<string[]>([]);
  const [report, setReport] = useState<Report | null>(null);
  const proposal = () => ({ name: name.trim(), description, transport, tools });
  const validate = useAction(() => post<Report>("/shipyard/validate", proposal()));
  const ship = useAction(() => post("/shipyard/servers", proposal()));
  return (
    <form
      aria-labelledby="ship"
      onSubmit={async (event) => {
        event.preventDefault();
        ship.clear();
        const answer = await validate.run();
        setReport(answer ? (answer.data as Report) : null);
      }}
    >
      <h2 id="ship">Ship a server</h2>
      <div class="inline-fields">
        <Field label="Server name" hint="Lower-case letters, digits, '-' or '_'.">
          {(id, hint) => <input id={id} aria-describedby={hint} value={name} maxLength={40} onInput={(event) => setName(event.currentTarget.value)} />}
        </Field>
        <Field label="Transport">
          {(id) => (
            <select id={id} value={transport} onChange={(event) => setTransport(event.currentTarget.value)}>
              <option value="streamable-http">streamable HTTP (a URL)</option>
              <option value="stdio">stdio (a command)</option>
            </select>
          )}
        </Field>
      </div>
      <Field label="Description" hint="What the server is for, for its users.">
        {(id, hint) => (
          <input id={id} aria-describedby={hint} value={description} maxLength={1024} onInput={(event) => setDescription(event.currentTarget.value)} />
        )}
      </Field>
      <fieldset>
        <legend>Tools it carries</legend>
        {shippable.length === 0 && <p class="empty">Nothing can ship yet: publish a tool or a knowledge tool first.</p>}
        <ul class="plain-list">
          {shippable.map((tool) => (
            <li key={tool.name}>
              <label class="choice">
                <input
                  type="checkbox"
                  checked={tools.includes(tool.name)}
                  onChange={(event) =>
                    setTools(event.currentTarget.checked ? [...tools, tool.name] : tools.filter((kept) => kept !== tool.name))
                  }
                />{" "}
                <code>{tool.name}</code> <span class="muted">({tool.kind}, {tool.risk})</span>
              </label>
              {!tool.ready && tool.reason && <span class="hint"> {tool.reason}</span>}
            </li>
          ))}
        </ul>
      </fieldset>
      <div class="actions">
        <button type="submit" disabled={validate.pending || !name.trim() || tools.length === 0}>
          Validate
        </button>
        <button
          type="button"
          class="primary"
          disabled={ship.pending || !report?.ok}
          onClick={async () => {
            await ship.run();
            setReport(null);
          }}
        >
          Ship
        </button>
      </div>
      <Notice outcome={validate.outcome} onClose={validate.clear} />
      {report && (
        <ul aria-label="What validation found">
          {report.tools.map((tool) => (
            <li key={tool.name}>
              <code>{tool.name}</code> <Badge tone={tool.problems.length ? "bad" : "ok"}>{tool.risk}</Badge>
              {tool.asksPerson && <span class="muted"> asks the person before each call</span>}
              {tool.problems.map((problem) => (
                <p key={problem} class="hint">
                  {problem}
                </p>
              ))}
            </li>
          ))}
        </ul>
      )}
      <Notice outcome={ship.outcome} onClose={ship.clear} />
    </form>
  );
}
