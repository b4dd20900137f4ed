// What /api/v1/tools answers (docs/tools.md; the gateway's areas/tools/views.py).

export type Risk = `L${number}`;

export interface Network {
  mode: string;
  hosts: string[];
}

export interface ToolSummary {
  name: string;
  description: string;
  state: "draft" | "published" | "missing-requirements" | "unknown";
  source: "authored" | "bundled" | "configuration" | "unknown";
  risk: Risk;
  network: Network;
  asksPerson: boolean;
  servedOnMcp: boolean;
  tested: boolean;
  missingEnv: string[];
  revision: number;
  createdAt: string | null;
  updatedAt: string | null;
  configurationKey?: string;
}

export interface Param {
  name: string;
  description?: string;
  type?: string;
  required?: boolean;
  testValue?: unknown;
}

/** The spec as the service keeps it; fields the editor does not show are sent back as they were read. */
export interface Spec {
  name: string;
  title?: string;
  description?: string;
  params?: Param[];
  staticVariables?: Record<string, string>;
  code?: string;
  sandbox?: { networkMode?: string; hostsAllow?: string[]; [field: string]: unknown };
  humanInTheLoop?: { mode?: string | null; promptTemplate?: string };
  destructive?: boolean;
  idempotent?: boolean;
  [field: string]: unknown;
}

export interface ToolDetail extends ToolSummary {
  spec: Spec;
  lastTest: { passed: boolean; at: string | null; error: string | null } | null;
  poisoningHits: string[];
}

export interface RiskReport {
  name: string;
  risk: Risk;
  reasons: string[];
  network: Network;
  asksPerson: boolean;
  aboveBaseline: boolean;
  weakensApproval: boolean;
  poisoningHits: string[];
  state: string | null;
  tested: boolean;
}

export interface TestReport {
  name: string;
  passed: boolean;
  localPass: boolean;
  published: boolean;
  result: unknown;
  error: string | null;
  console: string[];
  durationMs: number;
  guardBlocks: { reason: string; message: string }[];
}

export interface PublishPlan {
  summary: string;
  level: string;
  highRisk: boolean;
  refused: string | null;
  risk: RiskReport;
}

export interface Exposure {
  autoExpose: boolean;
  tools: string[];
  revision: number;
}

export const NETWORK_MODES = ["blocked", "strict", "allowlist", "open"] as const;
export const HITL_MODES = ["REQUIRED", "DISABLED"] as const;
export const PARAM_TYPES = ["string", "number", "integer", "boolean", "object", "array"] as const;
