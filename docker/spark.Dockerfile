# The Spark job (scripts/spark_consume.py) with the minibroker data source: Java 17 + Python +
# this project with the "spark" extra (pyspark, pyarrow). Build from the repository root:
#   docker build -f docker/spark.Dockerfile -t minibroker-spark .
#   docker run --rm --network host minibroker-spark --bootstrap-server localhost:9092 --topic events
# Large (pyspark is ~500 MB of jars); the broker image (docker/Dockerfile) stays small.
# eclipse-temurin's noble images are Ubuntu 24.04: python3 is 3.12 (pyspark 4.3 needs >= 3.11).
# Two stages, as docker/Dockerfile: "builder" compiles minibroker's wheel (C record codec and
# record futures) with the same base and Python as the runtime stage, which installs the wheel
# without a compiler.

FROM eclipse-temurin:17-jre-noble AS builder
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY broker/ broker/
COPY client/ client/
COPY scripts/build_wheel scripts/build_wheel
RUN scripts/build_wheel /wheels

FROM eclipse-temurin:17-jre-noble

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH \
    PYSPARK_PYTHON=/opt/venv/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/venv/bin/python \
    SPARK_LOCAL_IP=127.0.0.1

# A venv: Ubuntu's python3 refuses system-wide pip installs (PEP 668).
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv

# The wheel with the "spark" extra (pip takes extras after a wheel's path).
COPY --from=builder /wheels/*.whl /tmp/wheels/
RUN pip install --no-cache-dir "$(echo /tmp/wheels/minibroker-*.whl)[spark]" \
    && rm -rf /tmp/wheels \
    && python -m broker.build_info --require-c
WORKDIR /src
COPY scripts/spark_consume.py scripts/spark_consume.py

RUN useradd --uid 10002 --create-home --shell /usr/sbin/nologin spark
USER 10002
ENTRYPOINT ["python", "/src/scripts/spark_consume.py"]
