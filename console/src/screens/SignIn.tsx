// Signing in: the admin token once, for a session cookie; the token is not kept anywhere in the browser.
import { useEffect, useRef, useState } from "preact/hooks";
import { messageOf, post } from "../api";
import { Field } from "../ui/controls";
import { Notice } from "../ui/notice";

export function SignIn({ why, onSignedIn }: { why: string | null; onSignedIn: (csrf: string) => void }) {
  const [token, setToken] = useState("");
  const [pending, setPending] = useState(false);
  const [refused, setRefused] = useState<string | null>(null);
  const field = useRef<HTMLInputElement>(null);
  // The token is all this page asks for: the keyboard starts there, on opening and after Sign out (whose button is
  // gone, which would leave the focus nowhere).
  useEffect(() => field.current?.focus(), []);
  return (
    <main id="main" class="sign-in">
      <h1>Sign in to saip</h1>
      <p>
        Sign in with the admin token: <code>make run</code> prints it as <em>Admin token</em>, and it is in{" "}
        <code>$SAIP_HOME/admin-token</code>. The browser keeps a session cookie, not the token.
      </p>
      {why && <Notice outcome={{ ok: false, message: why, warnings: [] }} />}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          setPending(true);
          setRefused(null);
          post<{ csrf: string }>("/session", { token: token.trim() })
            .then((answer) => {
              setToken("");
              onSignedIn(answer.data.csrf);
            })
            .catch((failure) => setRefused(messageOf(failure)))
            .finally(() => setPending(false));
        }}
      >
        <Field label="Admin token">
          {(id) => (
            <input
              ref={field}
              id={id}
              type="password"
              autocomplete="off"
              spellcheck={false}
              value={token}
              onInput={(event) => setToken(event.currentTarget.value)}
              required
            />
          )}
        </Field>
        {refused && <Notice outcome={{ ok: false, message: refused, warnings: [] }} />}
        <div class="actions">
          <button type="submit" class="primary" disabled={pending || token.trim() === ""}>
            {pending ? "Signing in…" : "Sign in"}
          </button>
        </div>
      </form>
    </main>
  );
}
