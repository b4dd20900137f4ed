// A table of rows with a caption for screen readers, column headers, and what to say when there is no row.
import type { ComponentChildren } from "preact";

export interface Column<R> {
  title: string;
  cell: (row: R) => ComponentChildren;
  className?: string;
}

export function Table<R>({
  caption,
  columns,
  rows,
  rowKey,
  empty,
  onRow,
  selected,
}: {
  caption: string;
  columns: Column<R>[];
  rows: R[];
  rowKey: (row: R) => string;
  empty: ComponentChildren;
  onRow?: (row: R) => void;
  selected?: string | null;
}) {
  if (rows.length === 0) return <p class="empty">{empty}</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th scope="col" key={column.title} class={column.className}>
                {column.title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => {
            const key = rowKey(row);
            return (
              <tr key={key} class={selected === key ? "selected" : undefined} onClick={onRow ? () => onRow(row) : undefined}>
                {columns.map((column) => (
                  <td key={column.title} class={column.className}>
                    {column.cell(row)}
                  </td>
                ))}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** Older and newer pages of a list the audit service pages by cursor (`nextCursor`). */
export function Pager({
  cursors,
  next,
  onPage,
}: {
  cursors: number[];
  next: number | null;
  onPage: (cursors: number[]) => void;
}) {
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={cursors.length === 0} onClick={() => onPage([])}>
        Newest
      </button>
      <button type="button" disabled={cursors.length === 0} onClick={() => onPage(cursors.slice(0, -1))}>
        Newer
      </button>
      <button type="button" disabled={next === null} onClick={() => next !== null && onPage([...cursors, next])}>
        Older
      </button>
    </nav>
  );
}
