// Adding a server: a custom definition (its risk previewed, its connection tried once, then registered) or an entry
// of the shipped catalog. The definition goes to the REST route as typed, and the service validates it there: a
// header or variable holding a literal secret is refused with the service's own sentence, shown as it is.
import { useState } from "preact/hooks";
import { post } from "../../api";
import { useAction } from "../../resource";
import { Choice, Field } from "../../ui/controls";
import { Notice } from "../../ui/notice";
import { RiskBadge } from "../../ui/risk";
import type { ConnectionReport, RiskPreview, UpstreamTool } from "./types";

interface Pair {
  key: number;
  name: string;
  value: string;
}

interface Definition {
  id: string;
  name: string;
  transport: string;
  url: string;
  command: string;
  args: string;
  headers: Pair[];
  env: Pair[];
  docsUrl: string;
  description: string;
}

const TRANSPORTS = ["streamable-http", "sse", "stdio"];
const EMPTY: Definition = {
  id: "",
  name: "",
  transport: "streamable-http",
  url: "",
  command: "",
  args: "",
  headers: [],
  env: [],
  docsUrl: "",
  description: "",
};
let keys = 0;

/** The server as the REST route takes it (ServerInput): the arguments one a line. */
function bodyOf(definition: Definition): Record<string, unknown> {
  const pairs = (rows: Pair[]) => Object.fromEntries(rows.map((row) => [row.name, row.value]));
  return {
    id: definition.id.trim(),
    name: definition.name,
    transport: definition.transport,
    url: definition.url.trim(),
    command: definition.command.trim(),
    args: definition.args.split("\n").filter((line) => line.trim() !== ""),
    headers: pairs(definition.headers),
    env: pairs(definition.env),
    docsUrl: definition.docsUrl.trim(),
    description: definition.description,
  };
}

export function AddServer({ onAdded }: { onAdded: () => void }) {
  const [definition, setDefinition] = useState<Definition>(EMPTY);
  const [found, setFound] = useState<{ tools: UpstreamTool[]; risk: string; reasons: string[] } | null>(null);
  const register = useAction(() => post("/servers", bodyOf(definition)));
  const preview = useAction(() => post<RiskPreview>("/servers/risk", { server: bodyOf(definition) }));
  const trial = useAction(() => post<ConnectionReport>("/servers/test", { server: bodyOf(definition) }));
  const edit = (part: Partial<Definition>) => setDefinition({ ...definition, ...part });
  const stdio = definition.transport === "stdio";

  return (
    <section class="card" aria-labelledby="add-server">
      <h2 id="add-server">Add a server</h2>
      <form
        aria-label="A custom server"
        onSubmit={async (event) => {
          event.preventDefault();
          const answer = await register.run();
          if (answer?.ok) {
            setDefinition(EMPTY);
            setFound(null);
            onAdded();
          }
        }}
      >
        <div class="inline-fields">
          <Field label="Server id">
            {(id) => <input id={id} value={definition.id} onInput={(event) => edit({ id: event.currentTarget.value })} />}
          </Field>
          <Field label="Display name">
            {(id) => <input id={id} value={definition.name} onInput={(event) => edit({ name: event.currentTarget.value })} />}
          </Field>
          <Choice label="Transport" value={definition.transport} options={TRANSPORTS} onChange={(transport) => edit({ transport })} />
        </div>
        {stdio ? (
          <div class="inline-fields">
            <Field label="Command">
              {(id) => <input id={id} value={definition.command} onInput={(event) => edit({ command: event.currentTarget.value })} />}
            </Field>
            <Field label="Arguments" hint="One a line.">
              {(id, hint) => (
                <textarea id={id} aria-describedby={hint} rows={2} value={definition.args} onInput={(event) => edit({ args: event.currentTarget.value })} />
              )}
            </Field>
          </div>
        ) : (
          <Field label="URL">
            {(id) => <input id={id} class="wide-input" value={definition.url} onInput={(event) => edit({ url: event.currentTarget.value })} />}
          </Field>
        )}
        <Pairs
          legend={stdio ? "Environment" : "Headers"}
          rows={stdio ? definition.env : definition.headers}
          change={(rows) => edit(stdio ? { env: rows } : { headers: rows })}
        />
        <div class="inline-fields">
          <Field label="Documentation URL">
            {(id) => <input id={id} class="wide-input" value={definition.docsUrl} onInput={(event) => edit({ docsUrl: event.currentTarget.value })} />}
          </Field>
          <Field label="Description">
            {(id) => <input id={id} class="wide-input" value={definition.description} onInput={(event) => edit({ description: event.currentTarget.value })} />}
          </Field>
        </div>
        <div class="actions">
          <button
            type="button"
            disabled={preview.pending}
            onClick={async () => {
              const answer = await preview.run();
              const data = answer?.data as RiskPreview | undefined;
              setFound(data ? { tools: data.tools, risk: data.risk, reasons: data.reasons } : null);
            }}
          >
            Preview the risk
          </button>
          <button
            type="button"
            disabled={trial.pending}
            onClick={async () => {
              const answer = await trial.run();
              const data = answer?.data as ConnectionReport | undefined;
              setFound(data ? { tools: data.tools, risk: data.risk, reasons: data.riskReasons } : null);
            }}
          >
            {trial.pending ? "Connecting…" : "Try the connection"}
          </button>
          <button type="submit" class="primary" disabled={register.pending}>
            Register
          </button>
        </div>
      </form>
      <Notice outcome={preview.outcome} onClose={preview.clear} />
      <Notice outcome={trial.outcome} onClose={trial.clear} />
      <Notice outcome={register.outcome} onClose={register.clear} />
      {found && (
        <div class="found">
          <p>
            Risk <RiskBadge risk={found.risk} /> {found.reasons.join("; ")}
          </p>
          {found.tools.length > 0 && (
            <ul>
              {found.tools.map((tool) => (
                <li key={tool.name}>
                  {tool.name} <RiskBadge risk={tool.risk} /> <span class="muted">{tool.description}</span>
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  );
}

function Pairs({ legend, rows, change }: { legend: string; rows: Pair[]; change: (rows: Pair[]) => void }) {
  const edit = (key: number, part: Partial<Pair>) => change(rows.map((row) => (row.key === key ? { ...row, ...part } : row)));
  const one = legend === "Headers" ? "header" : "variable";
  return (
    <fieldset>
      <legend>{legend}</legend>
      <p class="hint">
        A secret is never written here: write a reference, <code>{"${NAME}"}</code> or <code>{"Bearer ${NAME}"}</code>, to a variable set
        where the tools service runs.
      </p>
      {rows.map((row, index) => (
        <div class="row-fields" key={row.key} role="group" aria-label={`${legend}: ${one} ${index + 1}`}>
          <input aria-label={`Name of ${one} ${index + 1}`} placeholder="name" value={row.name} onInput={(event) => edit(row.key, { name: event.currentTarget.value })} />
          <input
            aria-label={`Value of ${one} ${index + 1}`}
            placeholder="${NAME}"
            class="wide"
            value={row.value}
            onInput={(event) => edit(row.key, { value: event.currentTarget.value })}
          />
          <button type="button" class="quiet" aria-label={`Remove ${one} ${index + 1}`} onClick={() => change(rows.filter((other) => other.key !== row.key))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" onClick={() => change([...rows, { key: (keys += 1), name: "", value: "" }])}>
        Add a {one}
      </button>
    </fieldset>
  );
}
