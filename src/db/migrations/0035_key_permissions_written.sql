-- Restricted keys (docs/keys-and-permissions.md): every key's permissions are written out, and `access` says which
-- preset they equal (read_write: write on every resource; read_only: read on every resource), or `custom`. Keys made
-- before get their preset's permissions. A NULL `permissions` still means the preset `access` names: an instance
-- running older code during a deploy writes keys that way.
UPDATE api_keys
   SET permissions = CASE access
         WHEN 'read_only' THEN '{"contracts":"read","billing":"read","webhooks":"read","bulk_jobs":"read"}'::jsonb
         ELSE '{"contracts":"write","billing":"write","webhooks":"write","bulk_jobs":"write"}'::jsonb
       END
 WHERE permissions IS NULL;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_access_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_access_check CHECK (access IN ('read_write', 'read_only', 'custom'));
