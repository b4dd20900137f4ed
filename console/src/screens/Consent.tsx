// The consent screen of saip's OAuth: a client asks to connect to /mcp; the person sees who asks (its name, the host
// its metadata came from, where it sends the answer) and gives it the published tools only, or the management
// surface as well, or denies it. The answer's redirect takes the browser back to the client.
import { useState } from "preact/hooks";
import { get, post, segment } from "../api";
import { useAction, useResource } from "../resource";
import { useLocation } from "../router";
import { Time } from "../ui/controls";
import { LoadError, Notice } from "../ui/notice";

interface Asked {
  id: string;
  client: { id: string; name: string; host: string };
  redirectUri: string;
  redirectHost: string | null;
  asks: string[];
  resource: string;
  grants: { grant: string; description: string; available: boolean }[];
  expiresAt: string;
}

export default function Consent() {
  const { query } = useLocation();
  const id = query.get("request") ?? "";
  return (
    <>
      <div class="page-head">
        <h1>Connect a client to saip</h1>
      </div>
      {id ? <Request id={id} /> : <p role="alert">This page answers a client's sign-in; it opens from the client, with its request.</p>}
    </>
  );
}

/** One client's request, read by its id: nothing is read without one (there is no request to show). */
function Request({ id }: { id: string }) {
  const asked = useResource((signal) => get<Asked>(`/oauth/requests/${segment(id)}`, {}, signal), [id]);
  const [grant, setGrant] = useState("tools");
  const answer = useAction((approve: boolean) =>
    approve
      ? post<{ redirect: string }>(`/oauth/requests/${segment(id)}/approve`, { grant })
      : post<{ redirect: string }>(`/oauth/requests/${segment(id)}/deny`),
  );
  const request = asked.envelope?.data;
  async function answered(approve: boolean): Promise<void> {
    const done = await answer.run(approve);
    const redirect = (done?.data as { redirect?: string } | undefined)?.redirect;
    if (redirect) window.location.assign(redirect);
  }
  return (
    <>
      <LoadError error={asked.error} retry={asked.reload} />
      {request && (
        <section class="card" aria-labelledby="asking">
          <h2 id="asking">{request.client.name} asks to connect to /mcp</h2>
          {asked.envelope?.warnings.map((warning) => (
            <p class="notice refused" key={warning}>
              {warning}
            </p>
          ))}
          <dl class="facts">
            <dt>Client</dt>
            <dd>{request.client.name}</dd>
            <dt>Its metadata from</dt>
            <dd>
              <code>{request.client.host}</code>
            </dd>
            <dt>Answer goes to</dt>
            <dd>
              <code>{request.redirectUri}</code>
            </dd>
            <dt>It asks for</dt>
            <dd>{request.asks.join(", ") || "the published tools"}</dd>
            <dt>For</dt>
            <dd>
              <code>{request.resource}</code>
            </dd>
            <dt>Answer before</dt>
            <dd>
              <Time iso={request.expiresAt} />
            </dd>
          </dl>
          <fieldset>
            <legend>What it may do</legend>
            {request.grants.map((offered) => (
              <label class="choice grant" key={offered.grant}>
                <input
                  type="radio"
                  name="grant"
                  value={offered.grant}
                  checked={grant === offered.grant}
                  disabled={!offered.available}
                  onChange={() => setGrant(offered.grant)}
                />{" "}
                {offered.description}
                {!offered.available && <span class="muted"> (it did not ask for this)</span>}
              </label>
            ))}
          </fieldset>
          <div class="actions">
            <button type="button" class="primary" disabled={answer.pending} onClick={() => void answered(true)}>
              Approve
            </button>
            <button type="button" class="danger" disabled={answer.pending} onClick={() => void answered(false)}>
              Deny
            </button>
          </div>
          <Notice outcome={answer.outcome?.ok === false ? answer.outcome : null} />
        </section>
      )}
    </>
  );
}
