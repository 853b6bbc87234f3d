# One image for every role; docker-compose.yml picks the role with `command`.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY contracts ./contracts
COPY infra ./infra
COPY projections ./projections
COPY scripts ./scripts
COPY services ./services
# `npm run build` also copies the files read at run time (event schemas, SQL) into dist/ and bundles the pages (dist/web).
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# DATA_DIR and the uploads volume: a named volume mounted here starts with this owner.
RUN mkdir -p /data/uploads && chown -R node:node /data
USER node
EXPOSE 3000
CMD ["node", "dist/services/process/main.js"]
