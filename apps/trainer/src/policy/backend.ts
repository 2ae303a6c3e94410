import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import path from 'node:path';

export type BackendName = 'tensorflow-gpu' | 'tensorflow' | 'wasm' | 'cpu';

/**
 * Picks the fastest TensorFlow.js backend this machine has: the native
 * TensorFlow bindings with a GPU (tfjs-node-gpu, an optional dependency that
 * only installs where libtensorflow can be fetched), then native CPU
 * (tfjs-node), then WebAssembly (SIMD, ~15× the pure-JS backend), then pure JS.
 * The name is logged in the run's config.
 */
export async function selectBackend(prefer?: BackendName): Promise<BackendName> {
  const order: BackendName[] = prefer ? [prefer] : ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'];
  for (const name of order) {
    try {
      if (name === 'tensorflow-gpu' || name === 'tensorflow') {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        require(name === 'tensorflow-gpu' ? '@tensorflow/tfjs-node-gpu' : '@tensorflow/tfjs-node');
        if (await tf.setBackend('tensorflow')) return name;
      } else if (name === 'wasm') {
        setWasmPaths(
          `${path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'))}/`,
        );
        if (await tf.setBackend('wasm')) return name;
      } else if (await tf.setBackend('cpu')) return name;
    } catch {
      // not installed or not usable here: try the next one
    }
  }
  throw new Error('no TensorFlow.js backend could be initialised');
}
