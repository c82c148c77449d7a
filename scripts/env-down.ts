/** npm run env:down — stops the local control plane and its landscapes; their data stays in .cache/env. */
import { down } from './env/control-plane.js';
import { downLandscapes } from './env/landscape.js';

const landscapes = await downLandscapes();
if (landscapes.length > 0) console.log(`landscapes stopped: ${landscapes.join(', ')}`);
console.log((await down()) ? 'control plane stopped' : 'control plane was not running');
