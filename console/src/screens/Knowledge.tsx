// Knowledge (the Vector Database): documents (a file, a URL, text; the ingest's progress live), pipelines, search
// with passages and scores, suggested tools and publishing a knowledge tool.
import { del, get, segment } from "../api";
import { useAction, useResource } from "../resource";
import { Badge, Time } from "../ui/controls";
import { LoadError, Notice } from "../ui/notice";
import { type Column, Table } from "../ui/table";
import { Ingest } from "./knowledge/Ingest";
import { Pipelines } from "./knowledge/Pipelines";
import { Search } from "./knowledge/Search";
import { Tools } from "./knowledge/Tools";
import type { Document, Pipeline, Status } from "./knowledge/types";

export default function Knowledge() {
  const status = useResource((signal) => get<Status>("/knowledge/status", {}, signal), [], ["knowledge"]);
  const documents = useResource((signal) => get<{ documents: Document[] }>("/knowledge/documents", {}, signal), [], ["knowledge"]);
  const pipelines = useResource((signal) => get<{ pipelines: Pipeline[] }>("/knowledge/pipelines", {}, signal), [], ["knowledge"]);
  const remove = useAction((name: string) => del(`/knowledge/documents/${segment(name)}`));
  const docs = documents.envelope?.data.documents ?? [];
  const columns: Column<Document>[] = [
    {
      title: "Document",
      cell: (row) => (
        <>
          {row.name} {row.managedBy && <Badge tone="info">in configuration</Badge>}
        </>
      ),
    },
    { title: "From", cell: (row) => `${row.sourceKind}: ${row.source}` },
    { title: "Type", cell: (row) => row.mediaType },
    { title: "Chunks", cell: (row) => row.chunks, className: "num" },
    { title: "Size", cell: (row) => `${(row.sizeBytes / 1024).toFixed(1)} KiB`, className: "num" },
    { title: "Added", cell: (row) => <Time iso={row.createdAt} /> },
    {
      title: "Actions",
      cell: (row) => (
        <button
          type="button"
          class="danger"
          aria-label={`Delete the document ${row.name}`}
          disabled={remove.pending}
          onClick={() => {
            if (window.confirm(`Delete '${row.name}', its chunks and its original?`)) void remove.run(row.name);
          }}
        >
          Delete
        </button>
      ),
    },
  ];
  const reload = () => {
    status.reload();
    documents.reload();
    pipelines.reload();
  };
  return (
    <>
      <div class="page-head">
        <h1>Knowledge</h1>
      </div>
      <LoadError error={status.error} retry={status.reload} />
      {status.envelope && <p role="status">{status.envelope.message}</p>}
      <Ingest roots={status.envelope?.data.ingestRoots ?? []} onDone={reload} />
      <section aria-labelledby="documents">
        <h2 id="documents">Documents</h2>
        <LoadError error={documents.error} retry={documents.reload} />
        <Notice outcome={remove.outcome} onClose={remove.clear} />
        <Table caption="Ingested documents" columns={columns} rows={docs} rowKey={(row) => row.id} empty="No document yet." />
      </section>
      <Pipelines pipelines={pipelines.envelope?.data.pipelines ?? []} documents={docs} />
      <Search pipelines={pipelines.envelope?.data.pipelines ?? []} />
      <Tools tools={status.envelope?.data.tools ?? []} pipelines={pipelines.envelope?.data.pipelines ?? []} />
    </>
  );
}
