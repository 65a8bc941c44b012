# Plexus image: the single executable dist/plexus (compiled by Bun; links only glibc, no Node).
# Build: docker build -t plexus:0.1.0 .     Run by deploy/daemonset.yaml twice: `plexus install …` (the
# installer) and `plexus daemon …` (the optional node daemon; see README "Daemon mode").

# --- build stage: the pinned toolchain from package-lock.json (esbuild, the "node" package, bun)
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY esbuild.config.mjs tsconfig.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
RUN npm run build && ./dist/plexus --version

# --- final stage: glibc only (what `ldd dist/plexus` lists: libc, libm, libpthread, libdl), no shell, no Node
FROM gcr.io/distroless/base-debian12
COPY --from=build /src/dist/plexus /usr/local/bin/plexus
ENTRYPOINT ["/usr/local/bin/plexus"]
CMD ["install"]
