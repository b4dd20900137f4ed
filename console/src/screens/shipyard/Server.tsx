// One shipped server: its state, Run with the exact command shown first, Stop, Delete, its log lines (followed
// while it runs), and its bearer token and connection snippet, revealed on click.
import { useEffect, useState } from "preact/hooks";
import { del, get, post, segment } from "../../api";
import { useAction, useResource } from "../../resource";
import { Badge, Field, Snippet, Time } from "../../ui/controls";
import { LoadError, Notice } from "../../ui/notice";
import type { Plan, Shipped, Target } from "./types";

// How often the log lines are read while the person follows them.
const FOLLOW_MS = 1500;

export function stateTone(state: string): "ok" | "warn" | "bad" | "plain" {
  if (state === "running") return "ok";
  if (state === "failed" || state === "crashed") return "bad";
  return state === "stopped" || state === "shipped" ? "plain" : "warn";
}

export function Server({ server, targets }: { server: Shipped; targets: Target[] }) {
  const path = `/shipyard/servers/${segment(server.name)}`;
  const [target, setTarget] = useState("local");
  const [port, setPort] = useState("");
  const [plan, setPlan] = useState<Plan | null>(null);
  const preview = useAction(() => get<Plan>(`${path}/plan`, { target, port: port === "" ? null : Number(port) }));
  // The run asks for the port its plan named, so the command that starts is the one the person read.
  const run = useAction((planned: Plan) =>
    post(`${path}/run`, { target: planned.target, ...(planned.port === null ? {} : { port: planned.port }) }),
  );
  const stop = useAction(() => post(`${path}/stop`));
  const remove = useAction(() => del(path));
  const running = server.state === "running" || server.state === "starting";
  return (
    <section class="card" aria-labelledby="server-detail">
      <h2 id="server-detail">
        {server.name} v{server.version}
      </h2>
      <p>{server.description}</p>
      <dl class="facts">
        <dt>State</dt>
        <dd>
          <Badge tone={stateTone(server.state)}>{server.state}</Badge>
          {server.runningEarlierVersion !== null && (
            <span> running v{server.runningEarlierVersion}; v{server.version} is shipped and not running (stop, then run)</span>
          )}
          {server.restarts > 0 && <span class="muted"> ({server.restarts} restarts)</span>}
        </dd>
        <dt>Target</dt>
        <dd>{server.target ?? "—"}</dd>
        <dt>Endpoint</dt>
        <dd>{server.endpoint ? <code>{server.endpoint}</code> : "—"}</dd>
        <dt>Out of date</dt>
        <dd>{server.outOfDate ? `yes: ${server.staleParts.join(", ")} changed since it shipped` : "no"}</dd>
        <dt>Tools</dt>
        <dd>{server.tools.map((part) => `${part.name} (${part.kind})`).join(", ")}</dd>
        <dt>Risk</dt>
        <dd>{server.risk}</dd>
        {server.requirements.length > 0 && (
          <>
            <dt>Needs set</dt>
            <dd>{server.requirements.join(", ")}</dd>
          </>
        )}
        {server.lastError && (
          <>
            <dt>Last error</dt>
            <dd>{server.lastError}</dd>
          </>
        )}
        <dt>Shipped</dt>
        <dd>
          <Time iso={server.shippedAt} />
        </dd>
      </dl>
      <form
        class="inline-fields"
        aria-label={`Run ${server.name}`}
        onSubmit={async (event) => {
          event.preventDefault();
          run.clear();
          const answer = await preview.run();
          setPlan(answer ? (answer.data as Plan) : null);
        }}
      >
        <Field label="Target">
          {(id) => (
            <select id={id} value={target} onChange={(event) => (setTarget(event.currentTarget.value), setPlan(null))}>
              {targets.map((found) => (
                <option key={found.name} value={found.name}>
                  {found.name}
                  {found.usable ? "" : " (not usable here)"}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Port (local)">
          {(id) => (
            <input id={id} type="number" min={1024} max={65535} value={port} onInput={(event) => (setPort(event.currentTarget.value), setPlan(null))} />
          )}
        </Field>
        <button type="submit" disabled={preview.pending}>
          Run…
        </button>
        <button type="button" disabled={stop.pending || !running} onClick={() => void stop.run()}>
          Stop
        </button>
        <button
          type="button"
          class="danger"
          disabled={remove.pending}
          onClick={() => {
            if (window.confirm(`Delete '${server.name}' and every bundle version of it?`)) void remove.run();
          }}
        >
          Delete
        </button>
      </form>
      {plan && (
        <div class="notice info" role="region" aria-label="What the run does">
          <p>
            Running {plan.name} v{plan.version} on the {plan.target} target runs exactly:
          </p>
          <pre class="code">{plan.command}</pre>
          {plan.refused ? (
            <p>{preview.outcome?.message}</p>
          ) : (
            <div class="actions">
              <button
                type="button"
                class="primary"
                disabled={run.pending}
                onClick={async () => {
                  await run.run(plan);
                  setPlan(null);
                }}
              >
                Run this command
              </button>
              <button type="button" onClick={() => setPlan(null)}>
                Cancel
              </button>
            </div>
          )}
        </div>
      )}
      {!plan && <Notice outcome={preview.outcome?.ok === false ? preview.outcome : null} />}
      <Notice outcome={run.outcome} onClose={run.clear} />
      <Notice outcome={stop.outcome} onClose={stop.clear} />
      <Notice outcome={remove.outcome} onClose={remove.clear} />
      <h3>Deploy it elsewhere</h3>
      <p class="hint">
        The files a compose or Kubernetes run would use, with a bearer token of their own, ready to apply where an engine
        runs.
      </p>
      <div class="actions">
        <a class="button" href={`/api/v1${path}/export/archive?target=compose`} download>
          Download the compose project
        </a>
        <a class="button" href={`/api/v1${path}/export/archive?target=kubernetes`} download>
          Download the Kubernetes manifests
        </a>
      </div>
      <Token path={path} name={server.name} endpoint={server.endpoint} running={running} />
      <Logs path={path} running={running} />
    </section>
  );
}

function Token({ path, name, endpoint, running }: { path: string; name: string; endpoint: string | null; running: boolean }) {
  const [token, setToken] = useState<string | null>(null);
  const reveal = useAction(() => get<{ token: string }>(`${path}/token`));
  useEffect(() => setToken(null), [path, endpoint]);
  if (!running) return null;
  return (
    <>
      <h3>Connecting to it</h3>
      {token === null ? (
        <button
          type="button"
          disabled={reveal.pending}
          onClick={async () => {
            const answer = await reveal.run();
            setToken((answer?.data as { token: string } | null | undefined)?.token ?? null);
          }}
        >
          Reveal its bearer token
        </button>
      ) : (
        <>
          <Snippet text={token} label="the bearer token" />
          {endpoint && (
            <Snippet
              text={`claude mcp add --transport http ${name} ${endpoint} --header "Authorization: Bearer ${token}"`}
              label="the Claude Code command"
            />
          )}
          <button type="button" onClick={() => setToken(null)}>
            Hide it
          </button>
        </>
      )}
      {reveal.outcome && !reveal.outcome.ok && <Notice outcome={reveal.outcome} />}
    </>
  );
}

function Logs({ path, running }: { path: string; running: boolean }) {
  const [follow, setFollow] = useState(true);
  const logs = useResource((signal) => get<{ lines: string[] }>(`${path}/logs`, { lines: 200 }, signal), [path], ["shipyard"]);
  useEffect(() => {
    if (!follow || !running) return;
    const timer = window.setInterval(logs.reload, FOLLOW_MS);
    return () => window.clearInterval(timer);
  }, [follow, running, path]);
  const lines = logs.envelope?.data.lines ?? [];
  return (
    <>
      <h3>Log</h3>
      <label class="choice">
        <input type="checkbox" checked={follow} onChange={(event) => setFollow(event.currentTarget.checked)} /> Follow while it runs
      </label>
      <LoadError error={logs.error} retry={logs.reload} />
      <pre class="code log" role="log" aria-label="Its last log lines" aria-live="off">
        {lines.length ? lines.join("\n") : "No line yet."}
      </pre>
    </>
  );
}
