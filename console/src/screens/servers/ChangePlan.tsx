// The change being put together, and its dry run: the service plans it (POST /api/v1/exposure/plan) as it grows,
// and the plan (what is added under which name, at which risk, which tools will run without asking, what is refused
// and why) is on the screen before Apply. Apply sends the same change at the composition's revision the plan read, so
// a change made elsewhere meanwhile is refused rather than applied unseen.
import { useEffect, useState } from "preact/hooks";
import { call, type Envelope, messageOf, post } from "../../api";
import { useAction } from "../../resource";
import { Notice } from "../../ui/notice";
import { RiskBadge } from "../../ui/risk";
import { type Change, isEmpty, NO_CHANGE, type Plan } from "./types";

export function ChangePlan({ change, onChange, onApplied }: { change: Change; onChange: (change: Change) => void; onApplied: () => void }) {
  const [plan, setPlan] = useState<Envelope<Plan> | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const apply = useAction((planned: Plan) => post("/exposure", { ...change, expectedRevision: planned.revision }));
  const text = JSON.stringify(change);

  useEffect(() => {
    setPlan(null);
    setRefusal(null);
    if (isEmpty(change)) return;
    apply.clear(); // a new change: what the last apply answered is no longer news
    const controller = new AbortController();
    call<Plan>("POST", "/exposure/plan", change, controller.signal)
      .then(setPlan)
      .catch((failure: unknown) => {
        if (!controller.signal.aborted) setRefusal(messageOf(failure));
      });
    return () => controller.abort();
  }, [text]);

  if (isEmpty(change)) return <Notice outcome={apply.outcome} onClose={apply.clear} />;
  const planned = plan?.data;
  return (
    <section class="card plan" aria-labelledby="the-change">
      <h2 id="the-change">The change, planned</h2>
      <ul class="plain-list" aria-label="What the change holds">
        {change.add.map((member, index) => (
          <li key={`add-${index}`}>
            Serve {member.serverId}/{member.tool}
            {member.alias && <> as {member.alias}</>}, {member.hitl ? "asking the person" : "without asking"}{" "}
            <button type="button" class="quiet" onClick={() => onChange({ ...change, add: change.add.filter((_, at) => at !== index) })}>
              Take out
            </button>
          </li>
        ))}
        {change.remove.map((name) => (
          <li key={`remove-${name}`}>
            Stop serving {name}{" "}
            <button type="button" class="quiet" onClick={() => onChange({ ...change, remove: change.remove.filter((other) => other !== name) })}>
              Take out
            </button>
          </li>
        ))}
        {change.setHitl.map((setting) => (
          <li key={`hitl-${setting.name}`}>
            {setting.name} {setting.hitl ? "asks the person before each call" : "runs without asking"}{" "}
            <button
              type="button"
              class="quiet"
              onClick={() => onChange({ ...change, setHitl: change.setHitl.filter((other) => other.name !== setting.name) })}
            >
              Take out
            </button>
          </li>
        ))}
      </ul>
      <div role="status">
        {refusal !== null && <p class="refusal">{refusal}</p>}
        {plan === null && refusal === null && <p class="muted">Planning…</p>}
        {plan && <p class="plan-message">{plan.message}</p>}
      </div>
      {planned && planned.added.length + planned.hitlChanged.length > 0 && (
        <ul>
          {[...planned.added, ...planned.hitlChanged].map((member) => (
            <li key={member.name}>
              {member.name}: <RiskBadge risk={member.effectiveRisk} /> {member.withoutApproval ? "runs without human approval" : "asks the person"}
              {member.poisoning.length > 0 && <> (poisoning scan: {member.poisoning.join(", ")})</>}
            </li>
          ))}
        </ul>
      )}
      <div class="actions">
        <button
          type="button"
          class="primary"
          disabled={!planned || apply.pending}
          onClick={async () => {
            if (!planned) return;
            const answer = await apply.run(planned);
            if (answer?.ok) {
              onChange(NO_CHANGE);
              onApplied();
            }
          }}
        >
          Apply
        </button>
        <button type="button" onClick={() => onChange(NO_CHANGE)}>
          Discard the change
        </button>
      </div>
      <Notice outcome={apply.outcome} onClose={apply.clear} />
    </section>
  );
}
