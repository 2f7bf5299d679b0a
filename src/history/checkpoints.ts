/**
 * Signed checkpoints: what lets a prefix of a tenant's chain be deleted and the rest still be
 * proved. A checkpoint names the chain at one event — its seq and hash, how many events the chain
 * held up to it, when it was made — and is signed with Ed25519 (node:crypto). The kept suffix
 * verifies against it: the first kept event's `prev_hash` must be the checkpoint's hash. A copy
 * kept outside the database (a file, a receiver's log) is what makes a rewrite of both the suffix
 * and the stored checkpoint visible.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  hash,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { canonicalJson } from '../canonicalJson.js';
import { GatehouseError } from '../errors.js';

/** The signed fields of a checkpoint. */
export interface CheckpointBody {
  tenant_id: string;
  /** The seq of the last event the checkpoint covers. */
  seq: number;
  /** That event's hash: the `prev_hash` of the event after it. */
  hash: string;
  /** How many events the chain held up to and including `seq`. */
  event_count: number;
  created_at: string;
  /** {@link checkpointKeyId} of the public key that verifies the signature. */
  key_id: string;
}

/** A checkpoint with its Ed25519 signature (base64 over the canonical JSON of the body). */
export interface Checkpoint extends CheckpointBody {
  signature: string;
}

/** A checkpoint key pair: signs new checkpoints; the public half verifies them. */
export interface CheckpointSigner {
  privateKey: KeyObject;
  publicKey: KeyObject;
  keyId: string;
}

/** The ID of a public key: the first 32 hex digits of SHA-256 over its DER (SPKI) encoding. */
export function checkpointKeyId(publicKey: KeyObject): string {
  return hash('sha256', publicKey.export({ type: 'spki', format: 'der' }), 'hex').slice(0, 32);
}

/**
 * A signer from an Ed25519 private key in PEM (PKCS #8).
 * @throws {GatehouseError} `invalid_request` when the key is not an Ed25519 private key.
 */
export function loadCheckpointSigner(pem: string): CheckpointSigner {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (cause) {
    throw new GatehouseError('invalid_request', 'The checkpoint key is not a PEM private key.', { cause });
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new GatehouseError('invalid_request', 'The checkpoint key must be an Ed25519 key (PKCS #8 PEM).');
  }
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, keyId: checkpointKeyId(publicKey) };
}

/**
 * A public key from PEM (SPKI), or the public half of a PEM private key.
 * @throws {GatehouseError} `invalid_request` when it is not an Ed25519 key.
 */
export function loadCheckpointPublicKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = pem.includes('PRIVATE KEY') ? createPublicKey(createPrivateKey(pem)) : createPublicKey(pem);
  } catch (cause) {
    throw new GatehouseError('invalid_request', 'The checkpoint public key is not a PEM key.', { cause });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new GatehouseError('invalid_request', 'The checkpoint public key must be an Ed25519 key.');
  }
  return key;
}

/** A new Ed25519 key pair as PEM: the private key PKCS #8, the public key SPKI. */
export function generateCheckpointKeyPair(): { privateKey: string; publicKey: string; keyId: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    keyId: checkpointKeyId(publicKey),
  };
}

/** Signs a checkpoint body (its `key_id` is the signer's). */
export function signCheckpoint(body: Omit<CheckpointBody, 'key_id'>, signer: CheckpointSigner): Checkpoint {
  const full: CheckpointBody = { ...body, key_id: signer.keyId };
  const signature = sign(null, Buffer.from(canonicalJson(checkpointBody(full))), signer.privateKey);
  return { ...full, signature: signature.toString('base64') };
}

/** Why a checkpoint does not verify with `publicKey`, or null when it does. */
export function checkpointProblem(checkpoint: Checkpoint, publicKey: KeyObject): string | null {
  if (checkpoint.key_id !== checkpointKeyId(publicKey)) {
    return `checkpoint at seq ${checkpoint.seq} is signed by key ${checkpoint.key_id}, not by the configured key ${checkpointKeyId(publicKey)}`;
  }
  const ok = verify(
    null,
    Buffer.from(canonicalJson(checkpointBody(checkpoint))),
    publicKey,
    Buffer.from(checkpoint.signature, 'base64'),
  );
  return ok ? null : `checkpoint at seq ${checkpoint.seq}: its signature does not verify`;
}

/**
 * Parses a checkpoint file's JSON.
 * @throws {GatehouseError} `invalid_request` when it is not a checkpoint.
 */
export function parseCheckpoint(text: string): Checkpoint {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch (cause) {
    throw new GatehouseError('invalid_request', 'The checkpoint file is not JSON.', { cause });
  }
  const strings = ['tenant_id', 'hash', 'created_at', 'key_id', 'signature'] as const;
  const numbers = ['seq', 'event_count'] as const;
  if (
    raw === null ||
    typeof raw !== 'object' ||
    strings.some((k) => typeof raw[k] !== 'string') ||
    numbers.some((k) => !Number.isSafeInteger(raw[k]))
  ) {
    throw new GatehouseError('invalid_request', 'The checkpoint file is not a Gatehouse checkpoint.');
  }
  return raw as unknown as Checkpoint;
}

/** The signed fields only (a stored or parsed checkpoint may carry more). */
function checkpointBody(c: CheckpointBody): CheckpointBody {
  return {
    tenant_id: c.tenant_id,
    seq: c.seq,
    hash: c.hash,
    event_count: c.event_count,
    created_at: c.created_at,
    key_id: c.key_id,
  };
}
