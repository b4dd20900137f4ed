// The console: signed in or not, the frame (top bar, navigation), and the screen the path names.
import type { FunctionComponent } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { del, get, messageOf, onSignedOut, setCsrf } from "./api";
import { feed, useConnection } from "./live";
import { useResource } from "./resource";
import { match, useLocation } from "./router";
import { type Screen, SCREENS, type ScreenProps } from "./screens";
import { SignIn } from "./screens/SignIn";
import { ThemeToggle } from "./theme";
import { Link } from "./ui/controls";
import { Notice } from "./ui/notice";

interface SessionData {
  signedIn: boolean;
  csrf?: string;
}

type State = { kind: "checking" } | { kind: "signed-out"; why: string | null } | { kind: "signed-in" };

export function App() {
  const [state, setState] = useState<State>({ kind: "checking" });

  useEffect(() => {
    get<SessionData>("/session")
      .then((answer) => {
        if (answer.data.signedIn && answer.data.csrf) signedIn(answer.data.csrf);
        else setState({ kind: "signed-out", why: null });
      })
      .catch((failure) => setState({ kind: "signed-out", why: messageOf(failure) }));
    return onSignedOut(() => {
      setCsrf(null);
      feed.stop();
      setState({ kind: "signed-out", why: "The session ended (idle too long, or signed out elsewhere): sign in again." });
    });
  }, []);

  function signedIn(csrf: string): void {
    setCsrf(csrf);
    feed.start();
    setState({ kind: "signed-in" });
  }

  if (state.kind === "checking") return <p class="muted sign-in">Opening the console…</p>;
  if (state.kind === "signed-out") return <SignIn why={state.why} onSignedIn={signedIn} />;
  return (
    <Frame
      onSignOut={() => {
        setCsrf(null);
        feed.stop();
        setState({ kind: "signed-out", why: null });
      }}
    />
  );
}

function Frame({ onSignOut }: { onSignOut: () => void }) {
  const { path } = useLocation();
  const found = route(path);
  const main = useRef<HTMLElement>(null);
  const [signOut, setSignOut] = useState<string | null>(null);
  const waiting = useResource(() => get<{ approvals: unknown[] }>("/approvals"), [], ["approvals"]);
  const waitingCount = waiting.envelope?.data.approvals.length ?? 0;

  useEffect(() => {
    document.title = found ? `${found.screen.title} · saip console` : "saip console";
    main.current?.focus({ preventScroll: true });
  }, [path]);

  return (
    <>
      <a class="skip" href="#main">
        Skip to the screen
      </a>
      <header class="top">
        <span class="brand">
          <img src="/console/favicon.svg" alt="" /> saip console
        </span>
        <LiveState />
        <ThemeToggle />
        <button
          type="button"
          onClick={() => {
            del("/session")
              .then(onSignOut)
              .catch((failure) => setSignOut(messageOf(failure)));
          }}
        >
          Sign out
        </button>
      </header>
      {signOut && <Notice outcome={{ ok: false, message: signOut, warnings: [] }} onClose={() => setSignOut(null)} />}
      <div class="frame">
        <nav aria-label="Screens">
          <ul>
            {SCREENS.filter((screen) => screen.nav).map((screen) => (
              <li key={screen.path}>
                <Link to={screen.path} current={found?.screen === screen || (screen.path !== "/" && path.startsWith(`${screen.path}/`))}>
                  <span>{screen.title}</span>
                  {screen.path === "/approvals" && waitingCount > 0 && (
                    <span class="count" aria-label={`${waitingCount} waiting`}>
                      {waitingCount}
                    </span>
                  )}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" ref={main} tabIndex={-1}>
          {found ? <Lazy screen={found.screen} params={found.params} /> : <NotFound path={path} />}
        </main>
      </div>
    </>
  );
}

function route(path: string): { screen: Screen; params: Record<string, string> } | null {
  for (const screen of SCREENS) {
    const params = match(screen.path, path);
    if (params !== null) return { screen, params };
  }
  return null;
}

const loaded = new Map<Screen, FunctionComponent<ScreenProps>>();

function Lazy({ screen, params }: { screen: Screen; params: Record<string, string> }) {
  const [component, setComponent] = useState<FunctionComponent<ScreenProps> | null>(() => loaded.get(screen) ?? null);
  const [failure, setFailure] = useState<string | null>(null);
  useEffect(() => {
    const known = loaded.get(screen);
    if (known) {
      setComponent(() => known);
      return;
    }
    setComponent(null);
    screen
      .load()
      .then((module) => {
        loaded.set(screen, module.default);
        setComponent(() => module.default);
      })
      .catch(() => setFailure("This screen's code could not be loaded: the console may have been updated; reload the page."));
  }, [screen]);
  if (failure) return <Notice outcome={{ ok: false, message: failure, warnings: [] }} />;
  if (component === null) return <p class="muted">Loading…</p>;
  const Component = component;
  return <Component params={params} />;
}

function NotFound({ path }: { path: string }) {
  return (
    <>
      <h1>No such screen</h1>
      <p>
        The console has no screen at {path}. <Link to="/">Go to the overview.</Link>
      </p>
    </>
  );
}

function LiveState() {
  const state = useConnection();
  const said = { live: "Live", connecting: "Connecting…", reconnecting: "Reconnecting…", stopped: "Not live" }[state];
  return (
    <span class={`live is-${state}`} role="status" aria-live="polite">
      {said}
    </span>
  );
}
