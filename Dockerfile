# Plexus image for one architecture: `FROM scratch` with one release executable and the glibc
# files it links, no shell, no Node. The same file tree as `npm run image` (offline, podman) builds:
# both take it from scripts/image-rootfs.mjs.
#   /usr/local/bin/plexus       the executable: amd64 the build for CPUs with AVX2, or with
#                               VARIANT=baseline the one for every x86-64 CPU; arm64 the arm64 build
#   /lib/<triplet>/…            glibc: Debian's libc6 at the version scripts/libc6.version pins
#   /usr/share/doc/plexus/      LICENSE and the image's SBOM (sbom.cdx.json)
# The context has no .git (.dockerignore), so the version, the commit and its time come in as
# build arguments (scripts/build-info.mjs prints them: version, commit, time). Build (BuildKit;
# one architecture per build, or both and a manifest list with buildx; .github/workflows/release.yml
# builds a release this way):
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg PLEXUS_BUILD_VERSION=<version> --build-arg PLEXUS_BUILD_COMMIT=<commit> \
#     --build-arg SOURCE_DATE_EPOCH=<time> --build-arg CREATED=<time, RFC 3339> \
#     [--build-arg VARIANT=baseline] -t <registry>/plexus:<version>[-baseline] --push .
# Run by deploy/daemonset.yaml twice: `plexus install …` (the installer) and `plexus daemon …`.

# --- build stage, on the build machine's own platform: it cross-compiles (Bun embeds the bundle
# into the npm runtime of each target) and takes the target's glibc from the pinned libc6 package
# file, downloaded and unpacked, never installed, so neither the target's architecture nor this
# stage's own glibc matters. With SOURCE_DATE_EPOCH the package comes from Debian's snapshot
# archive as of that time (the commit's), so a later rebuild of the same commit finds the same
# package after Debian has moved on; DEBIAN_SNAPSHOT names another copy of that archive.
FROM --platform=$BUILDPLATFORM node:24.21.0-bookworm-slim AS build
ARG TARGETARCH
ARG VARIANT=
ARG PLEXUS_BUILD_VERSION
ARG PLEXUS_BUILD_COMMIT
ARG SOURCE_DATE_EPOCH
ARG SOURCE_URL=
ARG DEBIAN_SNAPSHOT=https://snapshot.debian.org/archive
COPY scripts/libc6.version /tmp/libc6.version
RUN native="$(dpkg --print-architecture)" \
 && { [ "$TARGETARCH" = "$native" ] || dpkg --add-architecture "$TARGETARCH"; } \
 && if [ -n "$SOURCE_DATE_EPOCH" ]; then \
      at="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%dT%H%M%SZ)" \
      && printf 'deb [check-valid-until=no] %s/%s/%s %s main\n' \
           "$DEBIAN_SNAPSHOT" debian "$at" bookworm \
           "$DEBIAN_SNAPSHOT" debian-security "$at" bookworm-security \
           > /etc/apt/sources.list.d/snapshot.list; \
    fi \
 && apt-get update \
 && apt-get install -y --no-install-recommends binutils \
 && mkdir /libc6 && cd /libc6 \
 && apt-get download "libc6:$TARGETARCH=$(cat /tmp/libc6.version)" \
 && mv libc6_*.deb /libc6.deb && cd / && rmdir /libc6 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json .npmrc LICENSE ./
RUN npm ci --no-audit --no-fund
COPY esbuild.config.mjs tsconfig.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
ENV PLEXUS_SOURCE_URL=${SOURCE_URL}
RUN npm run build:release \
 && node scripts/image-rootfs.mjs --arch "$TARGETARCH" --variant "$VARIANT" \
      --libc6-deb /libc6.deb --out /rootfs

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
