// A risk level (L0 to L5) as a badge: L0 calm, up to L3 a warning colour, L4 and L5 the alarming one.
import { Badge, type Tone } from "./controls";

export function riskTone(risk: string): Tone {
  const level = Number(risk.slice(1));
  if (level === 0) return "ok";
  return level >= 4 ? "bad" : "warn";
}

export function RiskBadge({ risk }: { risk: string }) {
  return <Badge tone={riskTone(risk)}>{risk}</Badge>;
}
