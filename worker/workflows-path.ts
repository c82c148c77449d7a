/** The workflows' entry: the source under tsx, the compiled file in dist/ (the image, `npm run build`). */
import { fileURLToPath } from 'node:url';

export const workflowsPath = fileURLToPath(
  new URL(`../workflows/index.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url),
);
