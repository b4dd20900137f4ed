// The editor's fields: what the model reads (name, title, description, parameters), the code, the parameters' test
// values (the Local Pass runs with them), the sandbox's network, static variables (a secret as ${NAME}), approval.
import { Choice, Field } from "../../ui/controls";
import { CodeEditor } from "./CodeEditor";
import { type Draft, nextKey, type ParamRow, paramRow, type VariableRow } from "./draft";
import { HITL_MODES, NETWORK_MODES, PARAM_TYPES } from "./types";

type Change = (change: Partial<Draft>) => void;

/** `generation` names the text the form was filled with: a new one (another tool read) is a new code editor. */
export function Form({ draft, generation, change }: { draft: Draft; generation: number; change: Change }) {
  return (
    <>
      <div class="inline-fields">
        <Field label="Name" hint="The name /mcp serves it under.">
          {(id, hint) => (
            <input id={id} aria-describedby={hint} value={draft.name} onInput={(event) => change({ name: event.currentTarget.value })} />
          )}
        </Field>
        <Field label="Title">
          {(id) => <input id={id} value={draft.title} onInput={(event) => change({ title: event.currentTarget.value })} />}
        </Field>
      </div>
      <Field label="Description" hint="What the model reads to choose the tool.">
        {(id, hint) => (
          <textarea
            id={id}
            aria-describedby={hint}
            rows={2}
            class="prose"
            value={draft.description}
            onInput={(event) => change({ description: event.currentTarget.value })}
          />
        )}
      </Field>
      <CodeEditor
        key={generation}
        value={draft.code}
        onChange={(code) => change({ code })}
        hint="The body of an async JavaScript function: the parameters and static variables are its globals, and what it returns is the result. Tab moves on to the next field."
      />
      <Params rows={draft.params} change={(params) => change({ params })} />
      <fieldset>
        <legend>Sandbox</legend>
        <div class="inline-fields">
          <Choice label="Network mode" value={draft.networkMode} options={NETWORK_MODES} onChange={(networkMode) => change({ networkMode })} />
          <Field label="Allowed hosts" hint="For the allowlist mode: host names, commas between them.">
            {(id, hint) => (
              <input id={id} aria-describedby={hint} value={draft.hosts} onInput={(event) => change({ hosts: event.currentTarget.value })} />
            )}
          </Field>
        </div>
      </fieldset>
      <Variables rows={draft.variables} change={(variables) => change({ variables })} />
      <fieldset>
        <legend>Approval and annotations</legend>
        <div class="inline-fields">
          <Choice
            label="Ask the person before each call"
            value={draft.hitlMode}
            options={HITL_MODES}
            none="unset (the risk panel says what it comes to)"
            onChange={(hitlMode) => change({ hitlMode })}
          />
          <Field label="Question template">
            {(id) => <input id={id} value={draft.promptTemplate} onInput={(event) => change({ promptTemplate: event.currentTarget.value })} />}
          </Field>
        </div>
        <label class="choice">
          <input type="checkbox" checked={draft.destructive} onChange={(event) => change({ destructive: event.currentTarget.checked })} />
          Destructive
        </label>{" "}
        <label class="choice">
          <input type="checkbox" checked={draft.idempotent} onChange={(event) => change({ idempotent: event.currentTarget.checked })} />
          Idempotent
        </label>
      </fieldset>
    </>
  );
}

function Params({ rows, change }: { rows: ParamRow[]; change: (rows: ParamRow[]) => void }) {
  const edit = (key: number, part: Partial<ParamRow>) => change(rows.map((row) => (row.key === key ? { ...row, ...part } : row)));
  return (
    <fieldset>
      <legend>Parameters and test values</legend>
      <p class="hint">The Local Pass runs the code once with these test values. A string's test value is its text; the other types' is JSON.</p>
      {rows.length === 0 && <p class="empty">No parameters.</p>}
      {rows.map((row, index) => {
        const which = `parameter ${index + 1}`;
        return (
          <div class="row-fields" key={row.key} role="group" aria-label={`Parameter ${index + 1}`}>
            <input aria-label={`Name of ${which}`} placeholder="name" value={row.name} onInput={(event) => edit(row.key, { name: event.currentTarget.value })} />
            <select aria-label={`Type of ${which}`} value={row.type} onChange={(event) => edit(row.key, { type: event.currentTarget.value })}>
              {PARAM_TYPES.map((type) => (
                <option key={type}>{type}</option>
              ))}
            </select>
            <label class="choice">
              <input type="checkbox" checked={row.required} onChange={(event) => edit(row.key, { required: event.currentTarget.checked })} />
              required
            </label>
            <input
              aria-label={`Description of ${which}`}
              placeholder="description"
              class="wide"
              value={row.description}
              onInput={(event) => edit(row.key, { description: event.currentTarget.value })}
            />
            <input
              aria-label={`Test value of ${which}`}
              placeholder="test value"
              class="wide"
              value={row.test}
              onInput={(event) => edit(row.key, { test: event.currentTarget.value })}
            />
            <button type="button" class="quiet" aria-label={`Remove ${which}`} onClick={() => change(rows.filter((other) => other.key !== row.key))}>
              Remove
            </button>
          </div>
        );
      })}
      <button type="button" onClick={() => change([...rows, paramRow({ name: "", required: false })])}>
        Add a parameter
      </button>
    </fieldset>
  );
}

function Variables({ rows, change }: { rows: VariableRow[]; change: (rows: VariableRow[]) => void }) {
  const edit = (key: number, part: Partial<VariableRow>) => change(rows.map((row) => (row.key === key ? { ...row, ...part } : row)));
  return (
    <fieldset>
      <legend>Static variables</legend>
      <p class="hint">
        Globals the code reads. A secret is never written here: write <code>{"${NAME}"}</code>, a secret the person made available in
        tools.secrets.
      </p>
      {rows.map((row, index) => (
        <div class="row-fields" key={row.key} role="group" aria-label={`Static variable ${index + 1}`}>
          <input aria-label={`Name of static variable ${index + 1}`} placeholder="NAME" value={row.name} onInput={(event) => edit(row.key, { name: event.currentTarget.value })} />
          <input
            aria-label={`Value of static variable ${index + 1}`}
            placeholder="value, or ${NAME}"
            class="wide"
            value={row.value}
            onInput={(event) => edit(row.key, { value: event.currentTarget.value })}
          />
          <button type="button" class="quiet" aria-label={`Remove static variable ${index + 1}`} onClick={() => change(rows.filter((other) => other.key !== row.key))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" onClick={() => change([...rows, { key: nextKey(), name: "", value: "" }])}>
        Add a static variable
      </button>
    </fieldset>
  );
}
