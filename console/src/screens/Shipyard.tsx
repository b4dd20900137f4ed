// Shipyard: what can ship, shipping, the shipped servers (state, target, endpoint, out of date; live), and one
// server's run, stop, delete, logs and token.
import { get } from "../api";
import { useResource } from "../resource";
import { Badge } from "../ui/controls";
import { LoadError } from "../ui/notice";
import { type Column, Table } from "../ui/table";
import { useLocation, navigate } from "../router";
import { Server, stateTone } from "./shipyard/Server";
import { Ship } from "./shipyard/Ship";
import type { Shippable, Shipped, Target } from "./shipyard/types";

export default function Shipyard() {
  const { query } = useLocation();
  const open = query.get("server");
  const servers = useResource((signal) => get<Shipped[]>("/shipyard/servers", {}, signal), [], ["shipyard"]);
  const shippable = useResource((signal) => get<Shippable[]>("/shipyard/shippable", {}, signal), [], ["tools", "knowledge"]);
  const targets = useResource((signal) => get<Target[]>("/shipyard/targets", {}, signal), []);
  const listed = servers.envelope?.data ?? [];
  const chosen = listed.find((server) => server.name === open) ?? null;
  const columns: Column<Shipped>[] = [
    {
      title: "Server",
      cell: (row) => (
        <button type="button" class="quiet link" onClick={() => navigate(`/shipyard?server=${encodeURIComponent(row.name)}`)}>
          {row.name} v{row.version}
        </button>
      ),
    },
    { title: "State", cell: (row) => <Badge tone={stateTone(row.state)}>{row.state}</Badge> },
    { title: "Target", cell: (row) => row.target ?? "—" },
    { title: "Endpoint", cell: (row) => (row.endpoint ? <code>{row.endpoint}</code> : "—") },
    { title: "Out of date", cell: (row) => (row.outOfDate ? <Badge tone="warn">out of date</Badge> : "no") },
    { title: "Risk", cell: (row) => row.risk },
  ];
  return (
    <>
      <div class="page-head">
        <h1>Shipyard</h1>
      </div>
      <LoadError error={servers.error} retry={servers.reload} />
      {servers.envelope && <p role="status">{servers.envelope.message}</p>}
      <section aria-labelledby="shipped">
        <h2 id="shipped">Shipped servers</h2>
        <Table caption="Shipped servers" columns={columns} rows={listed} rowKey={(row) => row.name} selected={open} empty="No server is shipped yet." />
      </section>
      {chosen && <Server key={chosen.name} server={chosen} targets={targets.envelope?.data ?? []} />}
      <Ship shippable={shippable.envelope?.data ?? []} />
      <section aria-labelledby="targets">
        <h2 id="targets">Targets</h2>
        <ul class="plain-list">
          {(targets.envelope?.data ?? []).map((target) => (
            <li key={target.name}>
              <strong>{target.name}</strong> <Badge tone={target.usable ? "ok" : "warn"}>{target.usable ? "usable" : "not usable here"}</Badge>
              {target.reason && <span> {target.reason}</span>}
              {target.remedy && <p class="hint">{target.remedy}</p>}
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}
