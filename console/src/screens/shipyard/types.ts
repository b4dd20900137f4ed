// The shipyard's JSON shapes, as the REST API answers them (the same the saip_shipyard_* tools return).

export interface Part {
  name: string;
  kind: string;
  sha256: string;
}

export interface Shipped {
  name: string;
  description: string;
  transport: string;
  version: number;
  bundleSha256: string;
  tools: Part[];
  requirements: string[];
  risk: string;
  shippedAt: string;
  state: string;
  target: string | null;
  endpoint: string | null;
  runningVersion: number | null;
  runningEarlierVersion: number | null;
  outOfDate: boolean;
  staleParts: string[];
  withheld: string[];
  restarts: number;
  lastError: string | null;
  startedAt: string | null;
  managedBy: string | null;
}

export interface Shippable {
  name: string;
  kind: string;
  description: string;
  risk: string;
  ready: boolean;
  reason: string | null;
}

export interface Target {
  name: string;
  usable: boolean;
  reason: string | null;
  remedy: string | null;
}

export interface Report {
  name: string;
  ok: boolean;
  problems: string[];
  requirements: string[];
  risk: string;
  tools: { name: string; kind: string | null; risk: string; problems: string[]; requirements: string[]; asksPerson: boolean }[];
}

export interface Plan {
  name: string;
  target: string;
  version: number;
  bundleSha256: string;
  command: string;
  /** The port the command names (local target): a run asked with it runs this very command. */
  port: number | null;
  refused: string | null;
}
