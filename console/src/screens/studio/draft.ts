// The editor's form and the tool spec it sends: what the person typed, turned into the spec the REST API takes, and
// back. Nothing here decides what is valid: the service says so, in its own words, when the draft is saved.
import type { Param, Spec } from "./types";

export interface ParamRow {
  key: number;
  name: string;
  description: string;
  type: string;
  required: boolean;
  /** The test value as typed: text for a string parameter, JSON for the others; empty leaves it out. */
  test: string;
}

export interface VariableRow {
  key: number;
  name: string;
  value: string;
}

export interface Draft {
  name: string;
  title: string;
  description: string;
  code: string;
  params: ParamRow[];
  variables: VariableRow[];
  networkMode: string;
  /** The hosts the allowlist mode allows, as typed (commas, spaces or lines between them). */
  hosts: string;
  hitlMode: string;
  promptTemplate: string;
  destructive: boolean;
  idempotent: boolean;
}

let keys = 0;
export const nextKey = (): number => (keys += 1);

export function paramRow(param: Partial<Param> = {}): ParamRow {
  const type = param.type ?? "string";
  const value = param.testValue;
  const test = value === undefined || value === null ? "" : type === "string" && typeof value === "string" ? value : JSON.stringify(value);
  return {
    key: nextKey(),
    name: param.name ?? "",
    description: param.description ?? "",
    type,
    required: param.required ?? true,
    test,
  };
}

/** A new tool: one parameter with its test value and code that uses it, so its first Local Pass can pass. */
export function blank(): Draft {
  return {
    name: "",
    title: "",
    description: "",
    code: "return { words: text.trim().split(/\\s+/).filter(Boolean).length };",
    params: [paramRow({ name: "text", description: "The text to read", type: "string", required: true, testValue: "one two three" })],
    variables: [],
    networkMode: "blocked",
    hosts: "",
    hitlMode: "",
    promptTemplate: "",
    destructive: false,
    idempotent: false,
  };
}

export function draftOf(spec: Spec): Draft {
  return {
    name: spec.name,
    title: spec.title ?? "",
    description: spec.description ?? "",
    code: spec.code ?? "",
    params: (spec.params ?? []).map((param) => paramRow(param)),
    variables: Object.entries(spec.staticVariables ?? {}).map(([name, value]) => ({ key: nextKey(), name, value })),
    networkMode: spec.sandbox?.networkMode ?? "blocked",
    hosts: (spec.sandbox?.hostsAllow ?? []).join(", "),
    hitlMode: spec.humanInTheLoop?.mode ?? "",
    promptTemplate: spec.humanInTheLoop?.promptTemplate ?? "",
    destructive: spec.destructive ?? false,
    idempotent: spec.idempotent ?? false,
  };
}

/** A test value as the spec holds it: the text of a string parameter; JSON for the others (text that is not JSON is
 * sent as typed, and the service says what it expected). */
function testValue(row: ParamRow): unknown {
  if (row.type === "string") return row.test;
  try {
    return JSON.parse(row.test) as unknown;
  } catch {
    return row.test;
  }
}

/** The spec to send: `base` (the spec as read, with the fields the editor does not show) with the form over it. */
export function specOf(draft: Draft, base: Spec | null): Spec {
  const params: Param[] = draft.params.map((row) => {
    const param: Param = { name: row.name, description: row.description, type: row.type, required: row.required };
    if (row.test !== "") param.testValue = testValue(row);
    return param;
  });
  return {
    ...(base ?? {}),
    name: draft.name.trim(),
    title: draft.title,
    description: draft.description,
    params,
    staticVariables: Object.fromEntries(draft.variables.map((row) => [row.name, row.value])),
    code: draft.code,
    sandbox: {
      ...(base?.sandbox ?? {}),
      networkMode: draft.networkMode,
      hostsAllow: draft.hosts.split(/[\s,]+/).filter(Boolean),
    },
    humanInTheLoop: { mode: draft.hitlMode || null, promptTemplate: draft.promptTemplate },
    destructive: draft.destructive,
    idempotent: draft.idempotent,
  };
}

/** A bundled or published tool's spec as a new draft to save under another name. */
export function copyOf(spec: Spec): Draft {
  return { ...draftOf(spec), name: `${spec.name}-copy` };
}
