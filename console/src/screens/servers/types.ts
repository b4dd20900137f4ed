// What /api/v1/servers and /api/v1/exposure answer (docs/upstream.md; the gateway's areas/mcp/views.py and
// areas/expose/views.py).

export interface ServerStatus {
  id: string;
  name: string;
  transport: string;
  url: string;
  command: string;
  args: string[];
  headers: Record<string, string>;
  env: Record<string, string>;
  docsUrl: string;
  trust: string;
  source: string;
  description: string;
  revision: number;
  state: "connecting" | "connected" | "failed" | "disabled" | "unknown";
  reason: string;
  serverInfo: { name: string; version: string };
  protocolVersion: string;
  capabilities: string[];
  tools: number;
  risk: string;
  riskReasons: string[];
  since: string | null;
}

export interface UpstreamTool {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: { readOnly: boolean; destructive: boolean; idempotent: boolean; openWorld: boolean };
  risk: string;
  riskReasons: string[];
  poisoning: string[];
  fingerprint: "unseen" | "active" | "awaiting-rereview";
}

export interface ServerTools {
  server: ServerStatus;
  tools: UpstreamTool[];
}

export interface CatalogEntry {
  name: string;
  description: string;
  transport: string;
  url: string;
  command: string;
  trust: string;
  docsUrl: string;
  needs: string[];
}

export interface RiskPreview {
  risk: string;
  reasons: string[];
  floor: boolean;
  tools: UpstreamTool[];
}

export interface ConnectionReport {
  ok: boolean;
  serverInfo: { name: string; version: string };
  protocolVersion: string;
  risk: string;
  riskReasons: string[];
  tools: UpstreamTool[];
}

export interface Member {
  serverId: string;
  tool: string;
  alias: string;
  hitl: boolean;
}

export interface ExposedTool extends Member {
  name: string;
  inherentRisk: string;
  effectiveRisk: string;
  served: boolean;
  withheld: string;
  fingerprint: "unseen" | "active" | "awaiting-rereview";
  upstream: string;
  poisoning: string[];
}

export interface Composition {
  tools: ExposedTool[];
  revision: number;
  cap: string;
}

export interface PlannedMember extends Member {
  name: string;
  inherentRisk: string;
  effectiveRisk: string;
  withoutApproval: boolean;
  poisoning: string[];
}

export interface Acknowledged {
  name: string;
  serverId: string;
  tool: string;
  changedFields: string[];
  diff: string;
  newHash: string;
  poisoning: string[];
}

export interface Plan {
  added: PlannedMember[];
  removed: string[];
  hitlChanged: PlannedMember[];
  acknowledged: Acknowledged[];
  refused: { name: string; reason: string }[];
  withoutApproval: string[];
  revision: number;
  cap: string;
  highRisk: boolean;
}

/** A change of the composition the person is putting together: planned (dry run) as it grows, applied on a click. */
export interface Change {
  add: Member[];
  remove: string[];
  setHitl: { name: string; hitl: boolean }[];
}

export const NO_CHANGE: Change = { add: [], remove: [], setHitl: [] };

export function isEmpty(change: Change): boolean {
  return change.add.length === 0 && change.remove.length === 0 && change.setHitl.length === 0;
}
