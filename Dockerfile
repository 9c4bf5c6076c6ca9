# msgx as a static binary on a minimal base (docs/deployment.md).
# docker build -t msgx . && docker run -p 8080:8080 -v msgx-data:/var/lib/msgx msgx
#
# The SQLite (modernc.org/sqlite) and MySQL drivers are pure Go, so CGO_ENABLED=0 gives a
# static binary. The base has no /usr/share/zoneinfo to rely on: -tags timetzdata embeds the
# time zone database, which sis.timezone (Asia/Shanghai by default) needs.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN CGO_ENABLED=0 go build -tags timetzdata -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
    -o /out/msgx ./cmd/msgx && mkdir -p /out/state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/msgx /usr/local/bin/msgx
# The working directory holds ./data (the SQLite file, file outboxes, history lines) unless
# MSGX_DATA_DIR or a config file says otherwise; mount a volume there.
COPY --from=build --chown=65532:65532 /out/state /var/lib/msgx
WORKDIR /var/lib/msgx
VOLUME /var/lib/msgx
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/msgx"]
CMD ["serve"]
