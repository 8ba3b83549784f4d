-- Argo CD health check for the svc kinds (svc.svc.io: ApiDefinition, SvcOasApiDefinition,
-- SvcStreamsApiDefinition, SecurityPolicy, OperatorContext, ApiKey, SubGraph, SuperGraph,
-- APIDescription, PortalAPICatalogue, PortalConfig), read from the status the
-- operator writes: the Ready condition and the generation it was computed for. The same script
-- serves every kind; docs/install.md says how to register it in argocd-cm.
--   Healthy      Ready=True for the current generation.
--   Progressing  not reconciled yet, an older generation, being deleted, or Ready=False waiting
--                for an object it references (reasons ending in NotFound or NotReady: the
--                operator queues it again when that object appears or becomes ready) or for
--                every gateway to serve what was written (Pending: the operator looks again).
--   Degraded     Ready=False for any other reason (a spec, Secret or document to fix, a
--                gateway that refuses or does not answer): the condition's message says why.
local hs = {}
local generation = obj.metadata ~= nil and obj.metadata.generation or nil

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted: the operator removes it from the gateway first"
  return hs
end

local ready = nil
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, condition in ipairs(obj.status.conditions) do
    if condition.type == "Ready" then
      ready = condition
    end
  end
end

if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to reconcile it"
  return hs
end

local observed = ready.observedGeneration
if observed == nil and obj.status ~= nil then
  observed = obj.status.observedGeneration
end
if generation ~= nil and observed ~= nil and observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to reconcile generation " .. tostring(generation)
  return hs
end

local message = ready.message or ""
local reason = ready.reason or ""
if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = message
  return hs
end

local waiting = string.match(reason, "NotFound$") or string.match(reason, "NotReady$") or reason == "Pending"
if ready.status == "False" and not waiting then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
if reason ~= "" then
  hs.message = reason .. ": " .. message
else
  hs.message = message
end
return hs
