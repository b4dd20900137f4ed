// Long lists a page at a time: the rows of the current page, and the controls that move between pages.
import { useEffect, useState } from "preact/hooks";

export const PAGE_SIZE = 15;

export interface Paged<R> {
  rows: R[];
  page: number;
  pages: number;
  total: number;
  setPage: (page: number) => void;
}

/** The page of `rows` shown now; a list that shrinks under the page shown moves back to its last page. */
export function usePaged<R>(rows: R[], size: number = PAGE_SIZE): Paged<R> {
  const [page, setPage] = useState(0);
  const pages = Math.max(1, Math.ceil(rows.length / size));
  const shown = Math.min(page, pages - 1);
  useEffect(() => {
    if (shown !== page) setPage(shown);
  }, [shown, page]);
  return { rows: rows.slice(shown * size, (shown + 1) * size), page: shown, pages, total: rows.length, setPage };
}

/** Previous and next, and where the list is; nothing when it fits one page. `label` names the list. */
export function Pages<R>({ paged, label }: { paged: Paged<R>; label: string }) {
  if (paged.pages <= 1) return null;
  return (
    <nav class="pager" aria-label={`Pages of ${label}`}>
      <button type="button" disabled={paged.page === 0} onClick={() => paged.setPage(paged.page - 1)}>
        Previous
      </button>
      <span class="muted" aria-live="polite">
        Page {paged.page + 1} of {paged.pages} ({paged.total})
      </span>
      <button type="button" disabled={paged.page + 1 >= paged.pages} onClick={() => paged.setPage(paged.page + 1)}>
        Next
      </button>
    </nav>
  );
}
