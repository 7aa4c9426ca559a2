// Type-checked (tsc --strict --noEmit) against `toolgate/neuron`'s declarations: the same API,
// with `dialect` narrowed to the one dialect that entry point speaks.
import init, { ApprovalClient, type ApprovalClientOptions, type Snapshot } from '../../pkg/neuron/toolgate.js';

export async function neuronOnly(threadId: string): Promise<'neuron'> {
  await init();
  const options: ApprovalClientOptions = { threadId, dialect: 'neuron' };
  // @ts-expect-error: `toolgate/neuron` has no Sidenet dialect (it throws `invalid_argument`).
  const sidenet: ApprovalClientOptions = { threadId, dialect: 'sidenet' };
  void sidenet;
  const client = new ApprovalClient(options);
  const snapshot: Snapshot = client.getSnapshot();
  client.free();
  return snapshot.dialect;
}
