# A static foldermirror binary on a small image that runs as a non-root user.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/foldermirror ./cmd/foldermirror

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/foldermirror /usr/local/bin/foldermirror
USER nonroot:nonroot
# The API and the admin listener (bind the admin one to a reachable address
# with adminListen only if the network around the container is trusted).
EXPOSE 8080
VOLUME ["/var/lib/foldermirror"]
ENTRYPOINT ["/usr/local/bin/foldermirror"]
CMD ["serve", "--config", "/etc/foldermirror/config.yaml"]
