// One tool in the editor: a saved one (`open`), a new draft, or a copy of another tool (`copy`). Save, Test (the
// Local Pass, after saving what is typed), Publish (what it would do shown first), exposure and delete, each through
// its /api/v1/tools route; what the service answers is shown as it said it.
import { useEffect, useState } from "preact/hooks";
import { del, get, messageOf, post, segment } from "../../api";
import { type Outcome, useAction, useResource } from "../../resource";
import { navigate } from "../../router";
import { Link } from "../../ui/controls";
import { LoadError, Notice } from "../../ui/notice";
import { blank, copyOf, type Draft, draftOf, specOf } from "./draft";
import { setExposure } from "./exposure";
import { Form } from "./Form";
import { LiveRisk, LocalPass, Publish, type Tested } from "./Panels";
import { StateBadge } from "./parts";
import type { Exposure, RiskReport, Spec, TestReport, ToolDetail, ToolSummary } from "./types";

interface Saved {
  name: string;
  revision: number;
}

const failed = (failure: unknown): Outcome => ({ ok: false, message: messageOf(failure), warnings: [] });

export function Editor({ open, copy }: { open: string | null; copy: string | null }) {
  const source = open ?? copy;
  const read = useResource(
    (signal) => (source ? get<ToolDetail>(`/tools/${segment(source)}`, {}, signal) : Promise.resolve(null as never)),
    [source],
    open ? ["tools"] : [],
  );
  const exposure = useResource((signal) => get<Exposure>("/tools/exposure", {}, signal), [], ["tools"]);
  const [draft, setDraft] = useState<Draft>(blank);
  const [generation, setGeneration] = useState(0);
  const [base, setBase] = useState<Spec | null>(null);
  const [saved, setSaved] = useState<Saved | null>(null);
  const [dirty, setDirty] = useState(false);
  const [said, setSaid] = useState<Outcome | null>(null);
  const [tested, setTested] = useState<Tested | null>(null);
  const [running, setRunning] = useState(false);
  const publish = useAction((name: string) => post(`/tools/${segment(name)}/publish`));
  const exposed = useAction(setExposure);
  const detail = source ? read.envelope?.data : undefined;

  // What was read becomes the form, unless the person has changed it since (their typing is never overwritten).
  useEffect(() => {
    if (!detail || dirty) return;
    const next = open ? draftOf(detail.spec) : copyOf(detail.spec);
    setBase(detail.spec);
    setDraft(next);
    if (next.code !== draft.code) setGeneration((current) => current + 1);
    if (open) setSaved({ name: detail.name, revision: detail.revision });
  }, [detail]);

  function change(part: Partial<Draft>): void {
    setDraft((current) => ({ ...current, ...part }));
    setDirty(true);
  }

  /** Save what is typed; the saved name, or null when the service refused (its sentence is shown). */
  async function save(): Promise<string | null> {
    const spec = specOf(draft, base);
    // The revision read belongs to the record read: under another name this is a new draft.
    const expectedRevision = saved && saved.name === spec.name ? saved.revision : 0;
    try {
      const answer = await post<ToolSummary>("/tools", { spec, expectedRevision });
      setSaid({ ok: answer.ok, message: answer.message, warnings: answer.warnings });
      setSaved({ name: answer.data.name, revision: answer.data.revision });
      setDirty(false);
      if (answer.data.name !== open) navigate(`/tools?open=${encodeURIComponent(answer.data.name)}`, { replace: true });
      return answer.data.name;
    } catch (failure) {
      setSaid(failed(failure));
      return null;
    }
  }

  async function test(): Promise<void> {
    setRunning(true);
    setTested(null);
    try {
      const name = dirty || !saved ? await save() : saved.name;
      if (name === null) return;
      let outcome: Outcome;
      let report: TestReport | null = null;
      try {
        const answer = await post<TestReport>(`/tools/${segment(name)}/test`);
        outcome = { ok: answer.ok, message: answer.message, warnings: answer.warnings };
        report = answer.data;
      } catch (failure) {
        outcome = failed(failure);
      }
      const risk = await post<RiskReport>("/tools/risk", { name }).then((answer) => answer.data, () => null);
      setTested({ outcome, report, risk });
    } finally {
      setRunning(false);
    }
  }

  async function remove(name: string, state: string): Promise<void> {
    if (!window.confirm(`Delete the ${state} '${name}'? It leaves /mcp at once if it is served.`)) return;
    try {
      const answer = await del(`/tools/${segment(name)}`);
      setSaid({ ok: answer.ok, message: answer.message, warnings: answer.warnings });
      navigate("/tools");
    } catch (failure) {
      setSaid(failed(failure));
    }
  }

  const setting = exposure.envelope?.data;
  const current = open && detail && saved?.name === detail.name ? detail : null;
  return (
    <>
      <p>
        <Link to="/tools">Back to the tools</Link>
      </p>
      <h2 class="editor-title">
        {current ? <>Editing {current.name}</> : copy ? <>A copy of {copy}</> : "A new tool"}
        {current && <StateBadge tool={current} />}
      </h2>
      <LoadError error={source ? read.error : null} retry={read.reload} />
      {current && current.missingEnv.length > 0 && (
        <p class="notice refused">Waiting for secrets that are not available: {current.missingEnv.join(", ")}</p>
      )}
      {current && current.poisoningHits.length > 0 && (
        <p class="notice refused">The poisoning scan found: {current.poisoningHits.join(", ")}</p>
      )}
      <Notice outcome={said} onClose={() => setSaid(null)} />
      <div class="studio">
        <form
          class="studio-form"
          aria-label="The tool"
          onSubmit={(event) => {
            event.preventDefault();
            void save();
          }}
        >
          <Form draft={draft} generation={generation} change={change} />
          <div class="actions">
            <button type="submit" class="primary">
              Save draft
            </button>
            {dirty && <span class="muted">Unsaved changes</span>}
          </div>
        </form>
        <div class="studio-side">
          <LiveRisk spec={specOf(draft, base)} />
          <LocalPass tested={tested} running={running} onTest={() => void test()} />
          {saved && (
            <Publish
              name={saved.name}
              dirty={dirty}
              publishing={publish.pending}
              onPublish={() => void publish.run(saved.name).then(read.reload)}
            />
          )}
          <Notice outcome={publish.outcome} onClose={publish.clear} />
          {current && setting && (
            <section class="card" aria-labelledby="served">
              <h3 id="served">On /mcp</h3>
              <p>{current.servedOnMcp ? "Served on /mcp now." : "Not served on /mcp."}</p>
              <label class="choice">
                <input
                  type="checkbox"
                  checked={setting.tools.includes(current.name)}
                  disabled={exposed.pending}
                  onChange={(event) => exposed.run(setting, { listed: [current.name, event.currentTarget.checked] }).then(exposure.reload)}
                />
                Listed in the exposure
              </label>
              <Notice outcome={exposed.outcome} onClose={exposed.clear} />
            </section>
          )}
          {current && (
            <section class="card" aria-labelledby="delete">
              <h3 id="delete">Delete</h3>
              <button type="button" class="danger" onClick={() => void remove(current.name, current.state)}>
                Delete {current.name}
              </button>
            </section>
          )}
        </div>
      </div>
    </>
  );
}
