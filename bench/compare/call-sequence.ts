// Which model and embedding calls a reply waited for, from each call's start and end time and each
// message's send and reply time (one clock): the calls that ended before the reply arrived, and of
// those the chain a reply waits through one after another (each call starting after the one before
// it ended). Calls that overlap count once in the chain: they cost the wait of the longer one.

export interface TimedCall {
  kind: "model" | "embedding";
  startMs: number;
  endMs: number;
}

export interface TimedTurn {
  sentMs: number;
  repliedMs: number;
}

/** Per message, means over the messages. */
export interface CallSequence {
  /** Calls started after the message was sent and ended before its reply arrived. */
  modelBefore: number;
  embeddingBefore: number;
  /** Of those, the ones in the chain ending at the reply: each waited for the one before it. */
  modelInSequence: number;
  embeddingInSequence: number;
}

export function callSequence(calls: TimedCall[], turns: TimedTurn[]): CallSequence {
  const total: CallSequence = {
    modelBefore: 0,
    embeddingBefore: 0,
    modelInSequence: 0,
    embeddingInSequence: 0,
  };
  for (const turn of turns) {
    const before = calls.filter((c) => c.startMs >= turn.sentMs && c.endMs <= turn.repliedMs);
    for (const call of before) total[`${call.kind}Before`] += 1;
    for (const call of chainTo(turn.repliedMs, before)) total[`${call.kind}InSequence`] += 1;
  }
  const per = (n: number) => (turns.length === 0 ? 0 : n / turns.length);
  return {
    modelBefore: per(total.modelBefore),
    embeddingBefore: per(total.embeddingBefore),
    modelInSequence: per(total.modelInSequence),
    embeddingInSequence: per(total.embeddingInSequence),
  };
}

/** Backwards from `until`: the call that ended last before it, then the same before that call's start. */
function chainTo(until: number, calls: TimedCall[]): TimedCall[] {
  const chain: TimedCall[] = [];
  let edge = until;
  for (;;) {
    let last: TimedCall | undefined;
    for (const call of calls)
      if (call.endMs <= edge && (!last || call.endMs > last.endMs)) last = call;
    if (!last) return chain;
    chain.push(last);
    edge = last.startMs;
  }
}
