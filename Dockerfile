# A static foldermirror binary on a small image that runs as a non-root user.
# The toolchain of go.mod's toolchain line, whose standard library has the
# security fixes govulncheck asks for.
FROM golang:1.27.3 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
# Only the sources of the binary's packages, never the whole tree (the
# .dockerignore keeps the rest, deploy/'s secrets above all, out of the
# build context too).
COPY *.go ./
COPY cmd/ cmd/
COPY config/ config/
COPY discovery/ discovery/
COPY googleclient/ googleclient/
COPY internal/demo/ internal/demo/
COPY internal/drivelist/ internal/drivelist/
COPY internal/gcpace/ internal/gcpace/
COPY internal/googlefake/ internal/googlefake/
COPY internal/graceful/ internal/graceful/
COPY httpapi/ httpapi/
COPY index/ index/
COPY internal/intern/ internal/intern/
COPY internal/timeq/ internal/timeq/
COPY internal/wire/ internal/wire/
COPY push/ push/
COPY schedule/ schedule/
COPY syncer/ syncer/
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/foldermirror ./cmd/foldermirror
# The index's directory, made here: the final image has no shell to make it.
RUN mkdir -p /out/var/lib/foldermirror

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/foldermirror /usr/local/bin/foldermirror
# Owned by nonroot (65532), so that the daemon can write its index there,
# and so is a new volume mounted on it (Docker copies the ownership).
COPY --from=build --chown=65532:65532 /out/var/lib/foldermirror /var/lib/foldermirror
# The configuration is mounted at /etc/foldermirror/config.yaml; the index
# lives in the volume, whatever dataDir the file says (a FOLDERMIRROR_*
# variable overrides its key).
ENV FOLDERMIRROR_CONFIG=/etc/foldermirror/config.yaml \
    FOLDERMIRROR_DATADIR=/var/lib/foldermirror
USER nonroot:nonroot
# The API. The admin listener stays on loopback unless adminListen says
# otherwise, and then adminTokenFile is required.
EXPOSE 8080
VOLUME ["/var/lib/foldermirror"]
# Ready once every library has a synced tree: the first full syncs of large
# libraries take minutes, hence the start period. It asks the admin
# listener on adminListen (loopback inside the container is fine).
HEALTHCHECK --interval=30s --timeout=10s --start-period=10m --retries=3 \
    CMD ["/usr/local/bin/foldermirror", "healthcheck", "--timeout", "5s"]
ENTRYPOINT ["/usr/local/bin/foldermirror"]
CMD ["serve"]
