// MCP servers and exposure: the upstream servers saip proxies (their connection states live, their tools, reconnect,
// remove), adding one (custom or from the catalog), the tools composed onto /mcp with their HITL switches, the change
// planned before Apply, and each changed definition's diff with Accept new definition.
import { useState } from "preact/hooks";
import { get } from "../api";
import { useResource } from "../resource";
import { AddServer } from "./servers/AddServer";
import { Catalog } from "./servers/Catalog";
import { Changed } from "./servers/Changed";
import { ChangePlan } from "./servers/ChangePlan";
import { Composition } from "./servers/Composition";
import { ServerList } from "./servers/ServerList";
import { ServerTools } from "./servers/ServerTools";
import { type Change, type Composition as Composed, NO_CHANGE, type ServerStatus } from "./servers/types";
import "./servers/servers.css";

export default function Servers() {
  const servers = useResource((signal) => get<ServerStatus[]>("/servers", {}, signal), [], ["servers"]);
  const composition = useResource((signal) => get<Composed>("/exposure", {}, signal), [], ["servers", "tools"]);
  const [open, setOpen] = useState<string | null>(null);
  const [change, setChange] = useState<Change>(NO_CHANGE);
  const reread = () => (servers.reload(), composition.reload());
  return (
    <>
      <div class="page-head">
        <h1>MCP servers</h1>
      </div>
      <p class="hint">
        Other MCP servers whose tools saip serves on its own /mcp, behind the same approvals and audit. The same methods as{" "}
        <code>saip servers</code>, <code>saip expose</code> and the AI's saip_mcp_* and saip_expose_* tools.
      </p>
      <ServerList servers={servers} open={open} onOpen={setOpen} />
      {open && <ServerTools serverId={open} onAdd={(member) => setChange({ ...change, add: [...change.add, member] })} />}
      <Changed tools={composition.envelope?.data.tools ?? []} onAccepted={reread} />
      <Composition composition={composition} change={change} onChange={setChange} />
      <ChangePlan change={change} onChange={setChange} onApplied={reread} />
      <div class="split">
        <AddServer onAdded={servers.reload} />
        <Catalog onAdded={servers.reload} />
      </div>
    </>
  );
}
