# syntax=docker/dockerfile:1
# One image for every component; the argument is worker/main.ts's role:
#   docker run IMAGE core | watcher | stage-controller | executor gateway-api | executor istio | all
# Kubernetes: deploy/ (docs/deploy.md). Configuration: environment variables (worker/config.ts).
#
# The image runs the compiled JavaScript (dist/, `npm run build`), not the TypeScript through tsx: tsx's
# loader thread and transforms cost about 80 MiB of resident memory in every process (bench/scale.ts).
# The code finds its files either way: worker/workflows-path.ts hands the Temporal bundler
# dist/workflows/index.js (`npm run build` bundles the workflow sandbox from that into
# dist/workflow-bundle.js), worker/publisher.ts reads package.json two levels up. Tests and benchmarks that run a component as its Pod does run this
# same dist/ (scripts/dist.ts).
ARG NODE_IMAGE=node:20-bookworm-slim

# Production dependencies only; the Temporal SDK's native modules come prebuilt for linux-x64/arm64.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# The compiled sources (tsconfig.build.json: the runtime folders only) and the workflow bundle
# (dist/workflow-bundle.js): the core worker starts without bundling its workflows.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM ${NODE_IMAGE}
# A fixed uid/gid that deploy/ names in runAsUser (runAsNonRoot needs a numeric user to verify).
RUN groupadd --system --gid 10001 konfidence \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin konfidence
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
# What runs, read-only for the user: the compiled code and package.json (its version).
COPY --from=build /app/dist ./dist
COPY package.json ./
USER 10001:10001
# Writable scratch is /tmp: deploy/ mounts an emptyDir there, the root filesystem is read-only.
ENV HOME=/tmp
# The workflow bundle made at build time (worker/workflow-bundle.ts), as Temporal advises for production.
ENV KONFIDENCE_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js
EXPOSE 8081
# node itself is PID 1 (no launcher in between): SIGTERM reaches worker/main.js, which stops polling,
# lets in-flight tasks finish within 25 s and releases its Lease (docs/ha.md).
ENTRYPOINT ["node", "dist/worker/main.js"]
CMD ["all"]
