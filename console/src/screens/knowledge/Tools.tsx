// Knowledge tools: the ones suggested from each pipeline's documents (a name and a description to improve), published
// onto /mcp with one click, and the ones published.
import { useState } from "preact/hooks";
import { del, get, post, segment } from "../../api";
import { useAction, useResource } from "../../resource";
import { Choice, Field, Time } from "../../ui/controls";
import { LoadError, Notice } from "../../ui/notice";
import { type Column, Table } from "../../ui/table";
import type { KnowledgeTool, Pipeline, Suggestion } from "./types";

export function Tools({ tools, pipelines }: { tools: KnowledgeTool[]; pipelines: Pipeline[] }) {
  const suggestions = useResource((signal) => get<{ suggestions: Suggestion[] }>("/knowledge/suggestions", {}, signal), [], ["knowledge"]);
  const unpublish = useAction((name: string) => del(`/knowledge/tools/${segment(name)}`));
  const [draft, setDraft] = useState<Suggestion | null>(null);
  const columns: Column<KnowledgeTool>[] = [
    { title: "Tool", cell: (row) => <code>{row.name}</code> },
    { title: "Searches", cell: (row) => row.pipeline },
    { title: "Description", cell: (row) => row.description },
    { title: "Published", cell: (row) => <Time iso={row.publishedAt} /> },
    {
      title: "Actions",
      cell: (row) => (
        <button type="button" class="danger" aria-label={`Unpublish ${row.name}`} disabled={unpublish.pending} onClick={() => void unpublish.run(row.name)}>
          Unpublish
        </button>
      ),
    },
  ];
  const offered = suggestions.envelope?.data.suggestions ?? [];
  return (
    <section aria-labelledby="knowledge-tools">
      <h2 id="knowledge-tools">Knowledge tools</h2>
      <Notice outcome={unpublish.outcome} onClose={unpublish.clear} />
      <Table caption="Published knowledge tools" columns={columns} rows={tools} rowKey={(row) => row.name} empty="No knowledge tool is published." />
      <h3>Suggested</h3>
      <LoadError error={suggestions.error} retry={suggestions.reload} />
      {offered.length === 0 && <p class="empty">{suggestions.envelope?.message ?? "Reading…"}</p>}
      <ul class="plain-list">
        {offered.map((suggestion) => (
          <li key={`${suggestion.pipeline}/${suggestion.name}`}>
            <code>{suggestion.name}</code> over <strong>{suggestion.pipeline}</strong>
            {suggestion.publishedAs ? (
              <span class="muted"> (published as {suggestion.publishedAs})</span>
            ) : (
              <button type="button" class="quiet" onClick={() => setDraft(suggestion)} aria-label={`Publish ${suggestion.name}`}>
                Publish…
              </button>
            )}
            <p class="hint">{suggestion.description}</p>
          </li>
        ))}
      </ul>
      <Publish key={draft?.name ?? "new"} draft={draft} pipelines={pipelines} />
    </section>
  );
}

function Publish({ draft, pipelines }: { draft: Suggestion | null; pipelines: Pipeline[] }) {
  const [name, setName] = useState(draft?.name ?? "");
  const [description, setDescription] = useState(draft?.description ?? "");
  const [picked, setPipeline] = useState(draft?.pipeline ?? "");
  // Until the person picks one, the first pipeline (the list may arrive after the form is shown).
  const pipeline = picked || pipelines[0]?.name || "";
  const publish = useAction(() => post("/knowledge/tools", { name: name.trim(), description, pipeline }));
  return (
    <form
      aria-labelledby="publish-knowledge"
      onSubmit={(event) => {
        event.preventDefault();
        void publish.run();
      }}
    >
      <h3 id="publish-knowledge">Publish a knowledge tool</h3>
      <div class="inline-fields">
        <Field label="Tool name" hint="Letters, digits, '_' or '-'.">
          {(id, hint) => <input id={id} aria-describedby={hint} value={name} maxLength={64} onInput={(event) => setName(event.currentTarget.value)} />}
        </Field>
        <Choice label="Pipeline it searches" value={pipeline} options={pipelines.map((found) => found.name)} onChange={setPipeline} />
      </div>
      <Field label="Description" hint="When an AI should use the tool.">
        {(id, hint) => (
          <textarea id={id} aria-describedby={hint} maxLength={1024} value={description} onInput={(event) => setDescription(event.currentTarget.value)} />
        )}
      </Field>
      <div class="actions">
        <button type="submit" class="primary" disabled={publish.pending || !name.trim() || !description.trim() || !pipeline}>
          Publish on /mcp
        </button>
      </div>
      <Notice outcome={publish.outcome} onClose={publish.clear} />
    </form>
  );
}
