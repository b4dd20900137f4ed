// Approvals: the questions waiting for the person (out of band), each with its exact text and a live countdown;
// Approve or Decline; the recent answers. A question answered, expired or withdrawn anywhere leaves at once.
import { get, post, segment } from "../api";
import { useAction, useResource } from "../resource";
import { Badge, Countdown, Time } from "../ui/controls";
import { LoadError, Notice } from "../ui/notice";

interface Waiting {
  id: string;
  tool: string;
  client: string;
  question: string;
  askedAt: string;
  deadline: string;
  secondsLeft: number;
  held: boolean;
  answer: string | null;
  level: string | null;
  binds: { tool: string; argumentsHash: string | null; revisions: Record<string, string> };
}

interface Answered {
  index: number;
  time: string;
  client: string;
  tool: string;
  decision: string | null;
  answeredVia: string | null;
  answeredAt: string | null;
  secondsToAnswer: number;
  outcome: string;
}

interface Approvals {
  approvals: Waiting[];
  /** The recent answers, newest first, from the audit trail (null while the audit service is away). */
  answered: Answered[] | null;
}

const WHO: Record<string, string> = {
  client: "the person at the client",
  "client-itself": "the client by itself, no person",
  "out-of-band": "the person, out of band",
  console: "the person, in the console",
  cli: "the person, with saip",
  rest: "the person, through the REST API",
};

export default function Approvals() {
  const listing = useResource((signal) => get<Approvals>("/approvals", {}, signal), [], ["approvals", "audit"]);
  const answer = useAction((id: string, approve: boolean) => post(`/approvals/${segment(id)}/${approve ? "approve" : "decline"}`));
  const waiting = listing.envelope?.data.approvals ?? [];
  const recent = listing.envelope?.data.answered ?? [];
  return (
    <>
      <div class="page-head">
        <h1>Approvals</h1>
      </div>
      <p class="hint">
        Questions from AI clients that cannot ask a person themselves wait here (management.out-of-band-approvals). With
        this inbox open, that setting is how a headless client, a cron job or <code>claude -p</code>, reaches you: the
        call runs, or not, exactly as the question says.
      </p>
      <LoadError error={listing.error} retry={listing.reload} />
      {listing.envelope && <p role="status">{listing.envelope.message}</p>}
      <Notice outcome={answer.outcome} onClose={answer.clear} />
      <section aria-labelledby="waiting">
        <h2 id="waiting">Waiting</h2>
        {waiting.length === 0 && <p class="empty">No question is waiting.</p>}
        <ul class="questions" aria-label="Waiting questions">
          {waiting.map((question) => (
            <li class="card" key={question.id} aria-labelledby={`q-${question.id}`}>
              <h3 id={`q-${question.id}`}>
                {question.tool} <span class="muted">for {question.client}</span>
              </h3>
              <p class="question">{question.question}</p>
              <dl class="facts">
                {question.level && (
                  <>
                    <dt>Level</dt>
                    <dd>
                      <Badge tone={question.level === "DESTRUCTIVE" ? "bad" : "warn"}>{question.level}</Badge>
                    </dd>
                  </>
                )}
                <dt>Binds</dt>
                <dd>
                  <code>{question.binds.tool}</code>
                  {question.binds.argumentsHash && (
                    <>
                      {" "}
                      with arguments <code>{question.binds.argumentsHash.slice(0, 12)}</code>
                    </>
                  )}
                  {Object.entries(question.binds.revisions).map(([what, revision]) => (
                    <span key={what}>
                      , {what} at <code>{revision}</code>
                    </span>
                  ))}
                </dd>
                <dt>Asked</dt>
                <dd>
                  <Time iso={question.askedAt} />
                </dd>
                <dt>Answer within</dt>
                <dd>
                  <Countdown deadline={question.deadline} onOver={listing.reload} />
                </dd>
                <dt>The client</dt>
                <dd>{question.held ? "waits on this call" : "asks again until it is answered"}</dd>
              </dl>
              <div class="actions">
                <button
                  type="button"
                  class="primary"
                  disabled={answer.pending}
                  onClick={() => answer.run(question.id, true).then(listing.reload)}
                  aria-label={`Approve ${question.tool} for ${question.client}`}
                >
                  Approve
                </button>
                <button
                  type="button"
                  class="danger"
                  disabled={answer.pending}
                  onClick={() => answer.run(question.id, false).then(listing.reload)}
                  aria-label={`Decline ${question.tool} for ${question.client}`}
                >
                  Decline
                </button>
              </div>
            </li>
          ))}
        </ul>
      </section>
      {recent.length > 0 && (
        <section aria-labelledby="answered">
          <h2 id="answered">Recent answers</h2>
          <ul aria-label="Recent answers">
            {recent.map((done) => (
              <li key={done.index}>
                {done.tool} for {done.client}: <strong>{done.decision ?? done.outcome}</strong>
                {done.answeredVia && <> by {WHO[done.answeredVia] ?? done.answeredVia}</>}
                {done.answeredAt && (
                  <>
                    , <Time iso={done.answeredAt} />
                  </>
                )}{" "}
                ({done.secondsToAnswer.toFixed(1)} s to answer)
              </li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}
