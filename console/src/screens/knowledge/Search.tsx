// Searching a pipeline's documents as a knowledge tool would: the passages, their document and their scores.
import { useState } from "preact/hooks";
import { post } from "../../api";
import { useAction } from "../../resource";
import { Choice, Field } from "../../ui/controls";
import { Notice } from "../../ui/notice";
import type { Hit, Pipeline } from "./types";

export function Search({ pipelines }: { pipelines: Pipeline[] }) {
  const [query, setQuery] = useState("");
  const [pipeline, setPipeline] = useState("");
  const [hits, setHits] = useState<Hit[] | null>(null);
  const search = useAction((body: Record<string, unknown>) => post<{ results: Hit[] }>("/knowledge/search", body));
  return (
    <section aria-labelledby="search">
      <h2 id="search">Search</h2>
      <form
        role="search"
        class="inline-fields"
        onSubmit={async (event) => {
          event.preventDefault();
          const answer = await search.run({ query, ...(pipeline ? { pipeline } : {}) });
          setHits((answer?.data as { results: Hit[] } | null | undefined)?.results ?? null);
        }}
      >
        <Field label="Question or keywords">
          {(id) => <input id={id} value={query} maxLength={2000} onInput={(event) => setQuery(event.currentTarget.value)} />}
        </Field>
        <Choice
          label="Pipeline"
          value={pipeline}
          options={pipelines.map((found) => found.name)}
          onChange={setPipeline}
          none="every document (default settings)"
        />
        <button type="submit" class="primary" disabled={search.pending || query.trim() === ""}>
          Search
        </button>
      </form>
      <Notice outcome={search.outcome} />
      {hits && hits.length > 0 && (
        <ol class="hits" aria-label="Passages found">
          {hits.map((hit) => (
            <li key={`${hit.document}#${hit.position}`} class="card">
              <p>
                <strong>
                  {hit.document} #{hit.position}
                </strong>
                {hit.page !== null && <span class="muted"> page {hit.page}</span>}{" "}
                <span class="muted">
                  score {hit.score.toFixed(3)}, relevance {hit.relevance.toFixed(3)}
                </span>
              </p>
              <p class="passage">{hit.text}</p>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
