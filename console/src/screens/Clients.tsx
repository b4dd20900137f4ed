// Clients: every credential /mcp accepts (the shared token, named tokens, OAuth grants) with its grant and its use;
// a named token made for a client that takes a header (shown once); a credential revoked on every replica.
import { useState } from "preact/hooks";
import { del, get, post, segment } from "../api";
import { useAction, useResource } from "../resource";
import { Badge, Choice, Field, Link, Snippet, Time } from "../ui/controls";
import { LoadError, Notice } from "../ui/notice";
import { type Column, Table } from "../ui/table";

interface Client {
  id: string;
  kind: string;
  name: string;
  grant: string;
  client: { id: string; host: string } | null;
  source: string | null;
  createdAt: string | null;
  firstSeen: string | null;
  lastSeen: string | null;
  callsLastHour: number;
  questionsLastHour: number;
}

const KINDS: Record<string, string> = { shared: "shared token", named: "named token", oauth: "OAuth" };

export default function Clients() {
  const listing = useResource((signal) => get<{ clients: Client[] }>("/clients", {}, signal), [], ["clients", "token"]);
  const revoke = useAction((id: string) => del(`/clients/${segment(id)}`));
  const clients = listing.envelope?.data.clients ?? [];
  const columns: Column<Client>[] = [
    { title: "Client", cell: (row) => row.name },
    { title: "Kind", cell: (row) => KINDS[row.kind] ?? row.kind },
    {
      title: "Grant",
      cell: (row) => <Badge tone={row.grant === "manage" ? "warn" : "info"}>{row.grant === "manage" ? "management too" : "published tools"}</Badge>,
    },
    { title: "From", cell: (row) => row.client?.host ?? row.source ?? "—" },
    { title: "First seen", cell: (row) => <Time iso={row.firstSeen} /> },
    { title: "Last seen", cell: (row) => <Time iso={row.lastSeen} /> },
    { title: "Calls (1 h)", cell: (row) => row.callsLastHour, className: "num" },
    { title: "Questions (1 h)", cell: (row) => row.questionsLastHour, className: "num" },
    {
      title: "Actions",
      cell: (row) => (
        <button
          type="button"
          class="danger"
          aria-label={`Revoke ${row.name}`}
          disabled={revoke.pending}
          onClick={() => {
            if (window.confirm(`Revoke ${row.name}? Every gateway replica refuses it at once.`)) void revoke.run(row.id).then(listing.reload);
          }}
        >
          Revoke
        </button>
      ),
    },
  ];
  return (
    <>
      <div class="page-head">
        <h1>Clients</h1>
      </div>
      <p class="hint">
        Each AI client connects with a credential of its own; the audit trail, the limits and the grant follow it. How
        each client connects is on the <Link to="/">Overview</Link>.
      </p>
      <LoadError error={listing.error} retry={listing.reload} />
      {listing.envelope && <p role="status">{listing.envelope.message}</p>}
      <Notice outcome={revoke.outcome} onClose={revoke.clear} />
      <Table caption="Clients that can call /mcp" columns={columns} rows={clients} rowKey={(row) => row.id} empty="No client can call /mcp yet." />
      <NamedToken onMade={listing.reload} />
    </>
  );
}

function NamedToken({ onMade }: { onMade: () => void }) {
  const [name, setName] = useState("");
  const [scope, setScope] = useState("tools");
  const [shown, setShown] = useState<string | null>(null);
  const add = useAction(() => post<{ token: string }>("/clients", { name: name.trim(), scope }));
  return (
    <form
      aria-labelledby="named-token"
      onSubmit={async (event) => {
        event.preventDefault();
        const answer = await add.run();
        if (answer?.ok) {
          setShown((answer.data as { token: string }).token);
          setName("");
          onMade();
        }
      }}
    >
      <h2 id="named-token">A named token for a client</h2>
      <p class="hint">For a client that sends a header (Claude Code, Cursor, VS Code, Codex CLI): one token each.</p>
      <div class="inline-fields">
        <Field label="Who it is for">
          {(id) => <input id={id} value={name} maxLength={100} onInput={(event) => setName(event.currentTarget.value)} />}
        </Field>
        <Choice label="Grant" value={scope} options={["tools", "manage"]} onChange={setScope} />
        <button type="submit" class="primary" disabled={add.pending || !name.trim()}>
          Make the token
        </button>
      </div>
      <Notice outcome={add.outcome} onClose={add.clear} />
      {shown && (
        <div class="notice info" role="region" aria-label="The new named token">
          <p>The token, shown this once: give it to that client now.</p>
          <Snippet text={shown} label="the named token" />
          <button type="button" onClick={() => setShown(null)}>
            I have kept it
          </button>
        </div>
      )}
    </form>
  );
}
