# `strata serve` in a container: MCP (streamable HTTP) at /mcp, HTTP JSON at /v1/<operation>, the
# projection workers and the compaction scheduler, over SQLite files in the /data volume (or the shared
# PostgreSQL log: see compose.yaml).
#
#   docker build -t strata .
#   docker run -p 127.0.0.1:7411:7411 -e STRATA_TOKEN=$(openssl rand -hex 24) -v strata-data:/data strata
#
# Inside the container Strata binds 0.0.0.0, which it refuses without a bearer token: set STRATA_TOKEN.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Dependencies first, from pyproject.toml alone: a change to the source reuses this layer and
# reinstalls nothing but Strata itself.
COPY pyproject.toml ./
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
print('\n'.join(p['dependencies'] + p['optional-dependencies']['postgres']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && useradd --system --uid 10001 --home-dir /data strata \
    && mkdir -p /data /opt/strata && chown strata /data
COPY . .
RUN pip install --no-deps '.[postgres]' \
    # assemble the embedding model once, at build time, outside the data volume
    && python -c "from strata_recall.projections.embedder import assemble_model_dir; assemble_model_dir('/opt/strata/minilm')"

ENV STRATA_DATA_DIR=/data STRATA_MODEL_DIR=/opt/strata/minilm STRATA_HOST=0.0.0.0 STRATA_PORT=7411 \
    STRATA_LOG_FORMAT=json
USER strata
VOLUME /data
EXPOSE 7411
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7411/healthz', timeout=4)"
CMD ["strata", "serve"]
