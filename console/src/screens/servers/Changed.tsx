// The definitions an upstream changed since they were accepted: the fingerprint ledger withholds each such tool
// from /mcp until the person accepts the new definition. Each shows the service's diff (and what the poisoning scan
// finds in it) and its own **Accept new definition**, which accepts exactly the definition shown: the plan's hash
// goes with the click, so a definition that changed again meanwhile is refused, not accepted unseen.
import { call, post } from "../../api";
import { type Action, useAction, useResource } from "../../resource";
import { Code } from "../../ui/controls";
import { LoadError, Notice } from "../../ui/notice";
import type { ExposedTool, Plan } from "./types";

type Accept = Action<[name: string, planned: Plan, hash: string]>;

export function Changed({ tools, onAccepted }: { tools: ExposedTool[]; onAccepted: () => void }) {
  const accept: Accept = useAction((name: string, planned: Plan, hash: string) =>
    post("/exposure", { acknowledgeChanged: [name], acknowledgedHashes: { [name]: hash }, expectedRevision: planned.revision }),
  );
  const changed = tools.filter((tool) => tool.fingerprint === "awaiting-rereview");
  return (
    <>
      <Notice outcome={accept.outcome} onClose={accept.clear} />
      {changed.length > 0 && (
        <section aria-labelledby="changed">
          <h2 id="changed">Changed definitions</h2>
          <p class="hint">
            These upstream tools changed their definition since it was accepted, and are withheld from /mcp until you accept the new
            one.
          </p>
          <ul class="definitions" aria-label="Changed definitions">
            {changed.map((tool) => (
              <Definition key={tool.name} tool={tool} accept={accept} onAccepted={onAccepted} />
            ))}
          </ul>
        </section>
      )}
    </>
  );
}

function Definition({ tool, accept, onAccepted }: { tool: ExposedTool; accept: Accept; onAccepted: () => void }) {
  const plan = useResource(
    (signal) => call<Plan>("POST", "/exposure/plan", { acknowledgeChanged: [tool.name] }, signal),
    [tool.name],
    ["servers"],
  );
  const planned = plan.envelope?.data;
  const shown = planned?.acknowledged.find((entry) => entry.name === tool.name);
  return (
    <li class="card definition" aria-labelledby={`changed-${tool.name}`}>
      <h3 id={`changed-${tool.name}`}>
        {tool.name} <span class="muted">{`${tool.serverId}/${tool.tool}`}</span>
      </h3>
      <LoadError error={plan.error} retry={plan.reload} />
      {planned && planned.refused.length > 0 && <p class="refusal">{plan.envelope?.message}</p>}
      {planned && shown && (
        <>
          <p>Changed: {shown.changedFields.join(", ")}</p>
          <Code>{shown.diff}</Code>
          {shown.poisoning.length > 0 && <p class="reason">The poisoning scan finds: {shown.poisoning.join(", ")}</p>}
          <p class="muted">
            The new definition's hash: <code>{shown.newHash.slice(0, 12)}</code>
          </p>
          <div class="actions">
            <button
              type="button"
              class="primary"
              disabled={accept.pending}
              aria-label={`Accept new definition of ${tool.name}`}
              onClick={async () => {
                const answer = await accept.run(tool.name, planned, shown.newHash);
                if (answer?.ok) onAccepted();
              }}
            >
              Accept new definition
            </button>
          </div>
        </>
      )}
    </li>
  );
}
