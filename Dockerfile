# cvo run as a container: docs/kind.md builds it, loads it into kind and deploys manifests/controller/.
FROM python:3.11-slim
WORKDIR /src
COPY pyproject.toml README.md ./
COPY cvo ./cvo
COPY manifests ./manifests
RUN pip install --no-cache-dir . && useradd --uid 1001 cvo
USER 1001
EXPOSE 9099
ENTRYPOINT ["cvo"]
CMD ["run", "--in-cluster"]
