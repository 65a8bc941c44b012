# Plexus image for one architecture: `FROM scratch` with the release executable(s) and the glibc
# files they link, no shell, no Node. The same file tree as `npm run image` (offline, podman) builds:
# both take it from scripts/image-rootfs.mjs.
#   /usr/local/bin/plexus       the entry (amd64: the baseline build, which starts on every x86-64 CPU)
#   /usr/local/bin/plexus-avx2  amd64 only: what the installer copies to nodes whose CPUs have AVX2
#   /lib/<triplet>/…            glibc (libc, libm, libpthread, libdl, the loader) from Debian 12
#   /usr/share/doc/plexus/      LICENSE and the image's SBOM (sbom.cdx.json)
# The context has no .git (.dockerignore), so the version, the commit and its time come in as
# build arguments (scripts/build-info.mjs prints them: version, commit, time). Build (BuildKit;
# one architecture per build, or both and a manifest list with buildx):
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg PLEXUS_BUILD_VERSION=<version> --build-arg PLEXUS_BUILD_COMMIT=<commit> \
#     --build-arg SOURCE_DATE_EPOCH=<time> --build-arg CREATED=<time, RFC 3339> \
#     -t <registry>/plexus:<version> --push .
# Run by deploy/daemonset.yaml twice: `plexus install …` (the installer) and `plexus daemon …`.

# --- build stage, on the build machine's own platform: it cross-compiles (Bun embeds the bundle
# into the npm runtime of each target) and takes the target's glibc from Debian's multiarch
# packages, so nothing of the target architecture runs here.
FROM --platform=$BUILDPLATFORM node:24-bookworm-slim AS build
ARG TARGETARCH
ARG PLEXUS_BUILD_VERSION
ARG PLEXUS_BUILD_COMMIT
ARG SOURCE_DATE_EPOCH
RUN arch="${TARGETARCH:-$(dpkg --print-architecture)}" \
 && { [ "$arch" = "$(dpkg --print-architecture)" ] || dpkg --add-architecture "$arch"; } \
 && apt-get update \
 && apt-get install -y --no-install-recommends binutils "libc6:$arch" \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json .npmrc LICENSE ./
RUN npm ci --no-audit --no-fund
COPY esbuild.config.mjs tsconfig.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
RUN npm run build:release \
 && node scripts/image-rootfs.mjs --arch "${TARGETARCH:-$(dpkg --print-architecture)}" --out /rootfs

# --- final stage: the tree, nothing else; the OCI labels of scripts/image.mjs
FROM scratch
ARG PLEXUS_BUILD_VERSION=0.1.0
ARG PLEXUS_BUILD_COMMIT=unknown
ARG CREATED=1970-01-01T00:00:00Z
ARG SOURCE_URL=
LABEL org.opencontainers.image.title="plexus" \
      org.opencontainers.image.version="${PLEXUS_BUILD_VERSION}" \
      org.opencontainers.image.revision="${PLEXUS_BUILD_COMMIT}" \
      org.opencontainers.image.licenses="Apache-2.0 AND MIT AND LGPL-2.1-or-later" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE_URL}"
COPY --from=build /rootfs/ /
ENTRYPOINT ["/usr/local/bin/plexus"]
CMD ["install"]
