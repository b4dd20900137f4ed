// Pipelines: which documents a search reads and how (topK, threshold, rerank); create, update, delete.
import { useState } from "preact/hooks";
import { del, put, segment } from "../../api";
import { useAction } from "../../resource";
import { Badge, Field } from "../../ui/controls";
import { Notice } from "../../ui/notice";
import { type Column, Table } from "../../ui/table";
import type { Document, Pipeline } from "./types";

export function Pipelines({ pipelines, documents }: { pipelines: Pipeline[]; documents: Document[] }) {
  const remove = useAction((name: string) => del(`/knowledge/pipelines/${segment(name)}`));
  const columns: Column<Pipeline>[] = [
    {
      title: "Pipeline",
      cell: (row) => (
        <>
          {row.name} {row.managedBy && <Badge tone="info">in configuration</Badge>}
        </>
      ),
    },
    { title: "Scope", cell: (row) => (row.documents.length ? row.documents.join(", ") : row.scope) },
    { title: "topK", cell: (row) => row.topK, className: "num" },
    { title: "Threshold", cell: (row) => row.threshold, className: "num" },
    { title: "Order", cell: (row) => (row.rerank ? "best first" : "reading order") },
    {
      title: "Actions",
      cell: (row) => (
        <button
          type="button"
          class="danger"
          disabled={remove.pending}
          aria-label={`Delete the pipeline ${row.name}`}
          onClick={() => {
            if (window.confirm(`Delete the pipeline '${row.name}'? Its documents stay.`)) void remove.run(row.name);
          }}
        >
          Delete
        </button>
      ),
    },
  ];
  return (
    <section aria-labelledby="pipelines">
      <h2 id="pipelines">Pipelines</h2>
      <Notice outcome={remove.outcome} onClose={remove.clear} />
      <Table caption="Pipelines" columns={columns} rows={pipelines} rowKey={(row) => row.name} empty="No pipeline yet: the first document makes one." />
      <PipelineForm documents={documents} />
    </section>
  );
}

function PipelineForm({ documents }: { documents: Document[] }) {
  const [name, setName] = useState("");
  const [chosen, setChosen] = useState<string[]>([]);
  const [topK, setTopK] = useState("");
  const [threshold, setThreshold] = useState("");
  const [order, setOrder] = useState("");
  const apply = useAction((body: Record<string, unknown>) => put(`/knowledge/pipelines/${segment(name.trim())}`, body));
  return (
    <form
      aria-labelledby="pipeline-form"
      onSubmit={(event) => {
        event.preventDefault();
        void apply.run({
          documents: chosen,
          topK: topK === "" ? null : Number(topK),
          threshold: threshold === "" ? null : Number(threshold),
          rerank: order === "" ? null : order === "best",
        });
      }}
    >
      <h3 id="pipeline-form">Create or update a pipeline</h3>
      <div class="inline-fields">
        <Field label="Name" hint="An existing pipeline of this name is updated.">
          {(id, hint) => <input id={id} aria-describedby={hint} value={name} maxLength={200} onInput={(event) => setName(event.currentTarget.value)} />}
        </Field>
        <Field label="Passages (topK)">
          {(id) => <input id={id} type="number" min={1} max={50} value={topK} onInput={(event) => setTopK(event.currentTarget.value)} />}
        </Field>
        <Field label="Threshold">
          {(id) => (
            <input id={id} type="number" min={0} max={1} step="0.01" value={threshold} onInput={(event) => setThreshold(event.currentTarget.value)} />
          )}
        </Field>
        <Field label="Order">
          {(id) => (
            <select id={id} value={order} onChange={(event) => setOrder(event.currentTarget.value)}>
              <option value="">as it is (best first when new)</option>
              <option value="best">best passages first</option>
              <option value="reading">reading order</option>
            </select>
          )}
        </Field>
      </div>
      <Field label="Documents in scope" hint="None chosen: every document, now and later.">
        {(id, hint) => (
          <select
            id={id}
            multiple
            aria-describedby={hint}
            size={Math.min(6, Math.max(2, documents.length))}
            onChange={(event) => setChosen(Array.from(event.currentTarget.selectedOptions, (option) => option.value))}
          >
            {documents.map((document) => (
              <option key={document.name} value={document.name} selected={chosen.includes(document.name)}>
                {document.name}
              </option>
            ))}
          </select>
        )}
      </Field>
      <div class="actions">
        <button type="submit" class="primary" disabled={apply.pending || name.trim() === ""}>
          Apply
        </button>
      </div>
      <Notice outcome={apply.outcome} onClose={apply.clear} />
    </form>
  );
}
