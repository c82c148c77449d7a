/** npm run env:down — stops the local control plane; its data stays in .cache/env/data. */
import { down } from './env/control-plane.js';

console.log((await down()) ? 'control plane stopped' : 'control plane was not running');
