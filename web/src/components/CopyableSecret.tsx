import { BlockStack, Button, InlineStack, Text, TextField } from '@shopify/polaris';
import { ClipboardIcon } from '@shopify/polaris-icons';
import { useEffect, useRef, useState } from 'react';

type Props = {
  label: string;
  secret: string;
  helpText?: string;
  /** What the secret is called in the button and the messages. */
  noun?: 'key' | 'secret';
  /** Lines of the field (a long secret wraps instead of scrolling). */
  rows?: number;
  /** Put the focus on the Copy button when shown (a dialog whose point is copying it). */
  focusCopy?: boolean;
};

/** A secret in a read-only field with a Copy button; when the browser refuses the clipboard, the text is selected. */
export function CopyableSecret({ label, secret, helpText, noun = 'secret', rows, focusCopy = false }: Props) {
  const [copy, setCopy] = useState<'idle' | 'copied' | 'failed'>('idle');
  const area = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (focusCopy) area.current?.querySelector('button')?.focus();
  }, [focusCopy]);
  const copySecret = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopy('copied');
    } catch {
      setCopy('failed');
      const field = area.current?.querySelector<HTMLInputElement | HTMLTextAreaElement>('input, textarea');
      field?.focus();
      field?.select();
    }
  };
  const Noun = noun === 'key' ? 'Key' : 'Secret';
  return (
    <div ref={area}>
      <BlockStack gap="200">
        <TextField label={label} value={secret} readOnly monospaced multiline={rows} autoComplete="off" selectTextOnFocus helpText={helpText} />
        <InlineStack gap="200" blockAlign="center">
          <Button icon={ClipboardIcon} onClick={copySecret}>
            {copy === 'copied' ? 'Copied' : `Copy ${noun}`}
          </Button>
          <div role="status" aria-live="polite">
            {copy === 'copied' && <Text as="p" tone="success">{Noun} copied to the clipboard.</Text>}
            {copy === 'failed' && (
              <Text as="p" tone="critical">
                The browser did not allow copying. The {noun} is selected: press Ctrl+C (⌘C on a Mac).
              </Text>
            )}
          </div>
        </InlineStack>
      </BlockStack>
    </div>
  );
}
