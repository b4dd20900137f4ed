// The shipped catalog of upstream servers, searched by words; an entry registered as it is (its ${NAME} references
// are set where the tools service runs).
import { useState } from "preact/hooks";
import { get, post } from "../../api";
import { useAction, useResource } from "../../resource";
import { Badge, Field } from "../../ui/controls";
import { LoadError, Notice } from "../../ui/notice";
import { whereOf } from "./ServerList";
import type { CatalogEntry } from "./types";

export function Catalog({ onAdded }: { onAdded: () => void }) {
  const [query, setQuery] = useState("");
  const [words, setWords] = useState("");
  const entries = useResource((signal) => get<CatalogEntry[]>("/servers/catalog", { query: words }, signal), [words]);
  const add = useAction((entry: CatalogEntry) => post("/servers/catalog", { catalogName: entry.name }));
  return (
    <section class="card" aria-labelledby="catalog">
      <h2 id="catalog">The catalog</h2>
      <form
        class="inline-fields"
        role="search"
        aria-label="Search the catalog"
        onSubmit={(event) => {
          event.preventDefault();
          setWords(query);
        }}
      >
        <Field label="Words">
          {(id) => <input id={id} type="search" value={query} onInput={(event) => setQuery(event.currentTarget.value)} />}
        </Field>
        <button type="submit">Search</button>
      </form>
      <LoadError error={entries.error} retry={entries.reload} />
      <Notice outcome={add.outcome} onClose={add.clear} />
      <ul class="plain-list">
        {(entries.envelope?.data ?? []).map((entry) => (
          <li key={entry.name}>
            <strong>{entry.name}</strong> <Badge>{entry.trust}</Badge> <span class="muted">{entry.transport}</span>
            <p class="description">{entry.description}</p>
            <p class="muted description">
              <code class="where">{whereOf({ url: entry.url, command: entry.command, args: [] })}</code>
              {entry.needs.length > 0 && <> needs {entry.needs.join(", ")}</>}
            </p>
            <button type="button" disabled={add.pending} onClick={() => add.run(entry).then((answer) => answer?.ok && onAdded())} aria-label={`Register ${entry.name}`}>
              Register
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
