# Plexus image: the single executable dist/plexus (Node 24 SEA; needs glibc and libstdc++, not Node).
# Build: docker build -t plexus:0.1.0 .     Run by deploy/daemonset.yaml twice: `plexus install …` (the
# installer) and `plexus daemon …` (the optional node daemon; see README "Daemon mode").

# --- build stage: the pinned toolchain from package-lock.json (esbuild, the "node" package, postject)
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY esbuild.config.mjs tsconfig.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
RUN npm run build && ./dist/plexus --version

# --- final stage: glibc + libstdc++ (what `ldd dist/plexus` lists), no shell, no Node
FROM gcr.io/distroless/cc-debian12
COPY --from=build /src/dist/plexus /usr/local/bin/plexus
ENTRYPOINT ["/usr/local/bin/plexus"]
CMD ["install"]
