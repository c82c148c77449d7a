# syntax=docker/dockerfile:1
# One image for every component; the argument is worker/main.ts's role:
#   docker run IMAGE core | watcher | stage-controller | executor gateway-api | executor istio | all
# Kubernetes: deploy/ (docs/deploy.md). Configuration: environment variables (worker/config.ts).
#
# TypeScript runs through tsx at run time, not compiled to dist/, because the code finds files by
# their place next to its sources: worker/core-worker.ts hands workflows/index.ts to the Temporal
# bundler (which compiles the workflow sandbox's code itself, from those sources), and
# worker/publisher.ts reads ../package.json for the version. A dist/ build would need a second layout
# of both, kept in step by hand; with tsx the image runs exactly what the tests and `npm start` run.
# tsx is a production dependency for that reason. The cost: it transpiles each file once at start
# (cached in /tmp) and brings esbuild (~10 MB).
ARG NODE_IMAGE=node:20-bookworm-slim

# Production dependencies only; the Temporal SDK's native modules come prebuilt for linux-x64/arm64.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE}
# A fixed uid/gid that deploy/ names in runAsUser (runAsNonRoot needs a numeric user to verify).
RUN groupadd --system --gid 10001 konfidence \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin konfidence
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
# The sources (.dockerignore leaves out tests, scripts, docs and manifests), read-only for the user.
COPY . .
USER 10001:10001
# Writable scratch (tsx's cache) is /tmp: deploy/ mounts an emptyDir there, the root filesystem is read-only.
ENV HOME=/tmp
EXPOSE 8081
# node itself is PID 1 (no launcher in between): SIGTERM reaches worker/main.ts, which stops polling,
# lets in-flight tasks finish within 25 s and releases its Lease (docs/ha.md).
ENTRYPOINT ["node", "--import", "tsx", "worker/main.ts"]
CMD ["all"]
